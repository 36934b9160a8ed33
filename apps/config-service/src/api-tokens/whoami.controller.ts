import { Controller, Get, Req } from '@nestjs/common';
import type { AuthenticatedRequest } from '@policygen/service-kit';
import { Requires } from '@policygen/service-kit';

/** Who the API takes the caller for: a token's name and role (any role may ask). */
@Controller('api/v1/whoami')
export class WhoamiController {
  @Get()
  @Requires({ role: 'reader' })
  whoami(@Req() request: AuthenticatedRequest): unknown {
    const principal = request.principal;
    return principal?.kind === 'api' ? { name: principal.name, role: principal.role } : principal;
  }
}
