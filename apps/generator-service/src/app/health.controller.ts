import { Controller, Get, Inject, Res } from '@nestjs/common';
import type { Response } from 'express';
import type { GenerationStatus } from '../generation/generation-loop';
import type { GenerationLoop } from '../generation/generation-loop';
import { GENERATION_LOOP } from './tokens';

/** Cycles failed in a row before the generator says it is not healthy (one failure may be a blip). */
const FAILURES_BEFORE_UNHEALTHY = 3;

@Controller()
export class HealthController {
  constructor(@Inject(GENERATION_LOOP) private readonly loop: GenerationLoop) {}

  /**
   * Ready once the configuration is loaded; 503 while its cycles keep failing, or at once when the
   * bus refuses them for good. The body says where generation stands, and why it fails.
   */
  @Get('health')
  health(
    @Res({ passthrough: true }) response: Response,
  ): GenerationStatus & { status: 'ok' | 'starting' | 'failing' } {
    const status = this.loop.status();
    const failing =
      status.failing !== null &&
      (!status.failing.retriable || status.failing.consecutiveFailures >= FAILURES_BEFORE_UNHEALTHY);
    if (failing) response.status(503);
    return { status: failing ? 'failing' : status.ready ? 'ok' : 'starting', ...status };
  }
}
