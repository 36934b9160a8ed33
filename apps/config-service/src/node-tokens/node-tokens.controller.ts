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
import { issueNodeToken } from '@policygen/distribution';
import { Requires } from '@policygen/service-kit';
import { NODE_TOKEN_SECRET } from '../app/tokens';
import { ENTITY_KINDS } from '../entities/entity-kinds';
import { EntityService } from '../entities/entity.service';

const NODES = ENTITY_KINDS.find((kind) => kind.collection === 'nodes');

/**
 * A node's credentials for its relay: `Authorization: Bearer <token>` on `GET /nodes/{id}/policies`.
 * The token is derived from the node id and the deployment's secret, so issuing it again gives the
 * same one; rotating the secret revokes them all.
 */
@Controller('api/v1/nodes')
// A token is a credential: one client may not ask for them by the thousand (429 beyond the limit).
@UseGuards(ThrottlerGuard)
@Requires({ role: 'admin' })
export class NodeTokensController {
  constructor(
    @Inject(EntityService) private readonly entities: EntityService,
    @Inject(NODE_TOKEN_SECRET) private readonly secret: string | null,
  ) {}

  @Post(':id/token')
  @HttpCode(200)
  issue(@Param('id') nodeId: string): { nodeId: string; token: string } {
    if (!NODES) throw new Error('the nodes collection is missing from ENTITY_KINDS');
    this.entities.get(NODES, { id: nodeId });
    if (this.secret === null)
      throw new ServiceUnavailableException(
        'node tokens are not configured: set POLICYGEN_NODE_TOKEN_SECRET',
      );
    return { nodeId, token: issueNodeToken(this.secret, nodeId) };
  }
}
