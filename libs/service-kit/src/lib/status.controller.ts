import { Public } from './auth/access';
import { Controller, Get, Inject } from '@nestjs/common';
import type { ServiceShellOptions } from './service-shell.options';
import { SERVICE_SHELL_OPTIONS } from './service-shell.options';

/** The service's own account of where it stands (revision, cursor, queue, ...), for people and tools. */
@Public()
@Controller()
export class StatusController {
  constructor(@Inject(SERVICE_SHELL_OPTIONS) private readonly options: ServiceShellOptions) {}

  @Get('status')
  status(): unknown {
    return this.options.status();
  }
}
