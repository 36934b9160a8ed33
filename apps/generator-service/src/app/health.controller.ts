import { Controller, Get, Inject } from '@nestjs/common';
import type { GeneratorService } from './generator-service';

export const GENERATOR = Symbol('GENERATOR');

@Controller()
export class HealthController {
  constructor(@Inject(GENERATOR) private readonly generator: GeneratorService) {}

  /** Ready once the configuration is loaded; the body says where generation stands. */
  @Get('health')
  health(): ReturnType<GeneratorService['status']> & { status: 'ok' | 'starting' } {
    const status = this.generator.status();
    return { status: status.ready ? 'ok' : 'starting', ...status };
  }
}
