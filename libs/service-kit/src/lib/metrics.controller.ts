import { Public } from './auth/access';
import { Controller, Get, Header, Inject } from '@nestjs/common';
import type { ServiceShellOptions } from './service-shell.options';
import { SERVICE_SHELL_OPTIONS } from './service-shell.options';

/** Prometheus text exposition of the service's registry. */
@Public()
@Controller()
export class MetricsController {
  constructor(@Inject(SERVICE_SHELL_OPTIONS) private readonly options: ServiceShellOptions) {}

  @Get('metrics')
  @Header('content-type', 'text/plain; version=0.0.4; charset=utf-8')
  metrics(): Promise<string> {
    return this.options.registry.metrics();
  }
}
