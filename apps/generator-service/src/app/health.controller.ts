import { Controller, Get, Inject } from '@nestjs/common';
import type { GenerationStatus } from '../generation/generation-loop';
import type { GenerationLoop } from '../generation/generation-loop';
import { GENERATION_LOOP } from './tokens';

@Controller()
export class HealthController {
  constructor(@Inject(GENERATION_LOOP) private readonly loop: GenerationLoop) {}

  /** Ready once the configuration is loaded; the body says where generation stands. */
  @Get('health')
  health(): GenerationStatus & { status: 'ok' | 'starting' } {
    const status = this.loop.status();
    return { status: status.ready ? 'ok' : 'starting', ...status };
  }
}
