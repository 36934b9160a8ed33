import { Controller, Get, Inject } from '@nestjs/common';
import type { Follower, FollowerStatus } from '../relay/follower';
import type { RelayIdentity } from './tokens';
import { FOLLOWER, RELAY_IDENTITY } from './tokens';

@Controller()
export class HealthController {
  constructor(
    @Inject(FOLLOWER) private readonly follower: Follower,
    @Inject(RELAY_IDENTITY) private readonly identity: RelayIdentity,
  ) {}

  /** Up as soon as it serves from disk; the body says how far it has followed its parent. */
  @Get('health')
  health(): FollowerStatus & RelayIdentity & { status: 'ok' } {
    return { status: 'ok', ...this.identity, ...this.follower.status() };
  }
}
