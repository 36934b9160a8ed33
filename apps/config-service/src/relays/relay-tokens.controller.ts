import {
  Controller,
  HttpCode,
  Inject,
  Param,
  Post,
  ServiceUnavailableException,
  UseGuards,
} from '@nestjs/common';
import { ThrottlerGuard } from '@nestjs/throttler';
import { ROOT_RELAY, issueRelayToken } from '@policygen/distribution';
import { Requires } from '@policygen/service-kit';
import { NODE_TOKEN_SECRET } from '../app/tokens';
import { ENTITY_KINDS } from '../entities/entity-kinds';
import { EntityService } from '../entities/entity.service';

const RELAYS = ENTITY_KINDS.find((kind) => kind.collection === 'relays');

/**
 * A relay's credential for its parent (`POLICYGEN_RELAY_TOKEN`): `Authorization: Bearer <token>`
 * on its feed, blobs and confirmations. Derived from the relay id and the deployment's secret, so
 * issuing it again gives the same one; rotating the secret revokes them all (relay-token.ts). It
 * opens a whole subtree's policies: admins only.
 */
@Controller('api/v1/relays')
@UseGuards(ThrottlerGuard)
@Requires({ role: 'admin' })
export class RelayTokensController {
  constructor(
    @Inject(EntityService) private readonly entities: EntityService,
    @Inject(NODE_TOKEN_SECRET) private readonly secret: string | null,
  ) {}

  @Post(':id/token')
  @HttpCode(200)
  issue(@Param('id') relayId: string): { relayId: string; token: string } {
    if (!RELAYS) throw new Error('the relays collection is missing from ENTITY_KINDS');
    // `root`, the root server's own relay, is in no fleet file: it always exists.
    if (relayId !== ROOT_RELAY) this.entities.get(RELAYS, { id: relayId });
    if (this.secret === null)
      throw new ServiceUnavailableException(
        'relay credentials are not configured: set POLICYGEN_NODE_TOKEN_SECRET',
      );
    return { relayId, token: issueRelayToken(this.secret, relayId) };
  }
}
