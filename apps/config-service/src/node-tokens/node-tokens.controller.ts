import {
  Body,
  Controller,
  HttpCode,
  Inject,
  Param,
  Post,
  ServiceUnavailableException,
  UseGuards,
} from '@nestjs/common';
import { ThrottlerGuard } from '@nestjs/throttler';
import { z } from 'zod';
import { issueNodeToken } from '@policygen/distribution';
import { Requires } from '@policygen/service-kit';
import { NODE_TOKEN_SECRET } from '../app/tokens';
import { ENTITY_KINDS } from '../entities/entity-kinds';
import { EntityService } from '../entities/entity.service';
import { validationFailed } from '../http/api-errors';
import { requestIssues } from '../http/issue-paths';

const NODES = ENTITY_KINDS.find((kind) => kind.collection === 'nodes');
const DAY_MS = 86_400_000;
export const DEFAULT_NODE_TOKEN_DAYS = 90;
export const MAX_NODE_TOKEN_DAYS = 366;

/** The optional body: how long the token is valid. No body is the default lifetime. */
const tokenRequestSchema = z
  .strictObject({
    expiresInDays: z.number().int().min(1).max(MAX_NODE_TOKEN_DAYS).default(DEFAULT_NODE_TOKEN_DAYS),
  })
  .optional();

/**
 * A node's credentials for its relay: `Authorization: Bearer <token>` on `GET /nodes/{id}/policies`.
 * The token names the node and when it expires, signed with a key derived from the node id and
 * the deployment's secret: issuing one does not revoke the others, rotating the secret revokes
 * them all (node-token.ts).
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
  issue(
    @Param('id') nodeId: string,
    @Body() body: unknown,
  ): { nodeId: string; token: string; expiresAt: string } {
    if (!NODES) throw new Error('the nodes collection is missing from ENTITY_KINDS');
    const request = tokenRequestSchema.safeParse(body);
    if (!request.success) throw validationFailed(requestIssues(request.error.issues), 'the token request');
    this.entities.get(NODES, { id: nodeId });
    if (this.secret === null)
      throw new ServiceUnavailableException(
        'node tokens are not configured: set POLICYGEN_NODE_TOKEN_SECRET',
      );
    const days = request.data?.expiresInDays ?? DEFAULT_NODE_TOKEN_DAYS;
    // To the second: the token carries its expiry in Unix seconds.
    const expiresAt = new Date(Math.floor((Date.now() + days * DAY_MS) / 1000) * 1000);
    return {
      nodeId,
      token: issueNodeToken(this.secret, nodeId, expiresAt),
      expiresAt: expiresAt.toISOString(),
    };
  }
}
