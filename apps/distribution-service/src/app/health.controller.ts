import { Controller, Get, Inject } from '@nestjs/common';
import type { Distributor, DistributorStatus } from '../distribution/distributor';
import { DISTRIBUTOR } from './tokens';

@Controller()
export class HealthController {
  constructor(@Inject(DISTRIBUTOR) private readonly distributor: Distributor) {}

  /** Ready once the relay tree is loaded; the body says where the root feed stands. */
  @Get('health')
  health(): DistributorStatus & { status: 'ok' | 'starting' } {
    const status = this.distributor.status();
    return { status: status.ready ? 'ok' : 'starting', ...status };
  }
}
