import {
  Controller,
  ForbiddenException,
  Get,
  Headers,
  HttpStatus,
  Inject,
  Param,
  Res,
  UnauthorizedException,
} from '@nestjs/common';
import type { Response } from 'express';
import { pack } from 'tar-stream';
import type { FeedEntry, FeedLog } from '@policygen/distribution';
import { FEED_LOG, claimedNodeId, entryFor, tokenMatches } from '@policygen/distribution';
import type { NodeTrees } from '../relay/node-trees';
import type { RelayIdentity } from './tokens';
import { NODE_TREES, RELAY_IDENTITY } from './tokens';

const PROMISES_GENERATED = 'rules/cfengine-community/rudder-promises-generated';

/**
 * What nodes ask their relay. A node presents its token (`Authorization: Bearer <token>`); the
 * relay knows each served node's token digest from the feed. A node reads only its own bundle.
 */
@Controller('nodes')
export class NodesController {
  constructor(
    @Inject(FEED_LOG) private readonly log: FeedLog,
    @Inject(NODE_TREES) private readonly trees: NodeTrees,
    @Inject(RELAY_IDENTITY) private readonly identity: RelayIdentity,
  ) {}

  /**
   * The node's bundle: a tar stream of its tree (`Accept: application/json` gives the file
   * listing instead). The ETag is the bundle hash; `If-None-Match` with it answers 304.
   */
  @Get(':id/policies')
  async policies(
    @Param('id') nodeId: string,
    @Headers('authorization') authorization: string | undefined,
    @Headers('if-none-match') ifNoneMatch: string | undefined,
    @Headers('accept') accept: string | undefined,
    @Res() response: Response,
  ): Promise<void> {
    const entry = this.authenticate(nodeId, authorization);
    const bundle = entry.bundle;
    const tree = await this.trees.servedTree(nodeId);
    if (!bundle || !tree) throw new UnauthorizedException('this relay does not serve the node');
    const etag = `"${bundle.hash}"`;
    response.setHeader('etag', etag);
    response.setHeader('cache-control', 'no-cache');
    response.setHeader('x-policygen-revision', String(bundle.revision));
    if (ifNoneMatch?.split(',').some((tag) => tag.trim() === etag)) {
      response.status(HttpStatus.NOT_MODIFIED).end();
      return;
    }
    if (accept?.includes('application/json')) {
      response.json({ nodeId, hash: bundle.hash, revision: bundle.revision, files: bundle.files });
      return;
    }
    const contents = await Promise.all(bundle.files.map((file) => this.trees.readFile(tree, file.path)));
    const archive = pack();
    const mtime = new Date(bundle.generatedAt);
    bundle.files.forEach((file, index) =>
      archive.entry({ name: file.path, mode: 0o644, mtime }, contents[index] ?? Buffer.alloc(0)),
    );
    archive.finalize();
    response.setHeader('content-type', 'application/x-tar');
    archive.pipe(response);
  }

  /** When the served bundle was generated (epoch milliseconds), as Rudder's agents check it. */
  @Get(':id/rudder-promises-generated')
  async promisesGenerated(
    @Param('id') nodeId: string,
    @Headers('authorization') authorization: string | undefined,
    @Res() response: Response,
  ): Promise<void> {
    const entry = this.authenticate(nodeId, authorization);
    const tree = await this.trees.servedTree(nodeId);
    if (!entry.bundle || !tree) throw new UnauthorizedException('this relay does not serve the node');
    response.setHeader('etag', `"${entry.bundle.hash}"`);
    response.type('text/plain').send(await this.trees.readFile(tree, PROMISES_GENERATED));
  }

  /** The entry of the node the token belongs to: 401 without a valid token, 403 for another node. */
  private authenticate(nodeId: string, authorization: string | undefined): FeedEntry {
    const token = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1];
    if (!token) throw new UnauthorizedException('a node token is required: Authorization: Bearer <token>');
    const claimed = claimedNodeId(token);
    const entry = claimed === null ? undefined : this.log.latest(claimed);
    const digest = entry?.bundle?.tokenDigest;
    if (
      !entry ||
      !digest ||
      entryFor(entry, this.identity.relayId) !== 'keep' ||
      !tokenMatches(token, digest)
    )
      throw new UnauthorizedException(
        `the token is not that of a node served by relay ${this.identity.relayId}`,
      );
    if (claimed !== nodeId) throw new ForbiddenException('a node may read only its own policies');
    return entry;
  }
}
