import {
  Controller,
  ForbiddenException,
  Get,
  Headers,
  HttpStatus,
  Inject,
  NotFoundException,
  Param,
  Res,
  UnauthorizedException,
} from '@nestjs/common';
import type { Response } from 'express';
import { pack } from 'tar-stream';
import type { BlobDirectory, FeedBundle, FeedLog } from '@policygen/distribution';
import { BLOB_DIRECTORY, FEED_LOG, claimedNodeId, entryFor, tokenMatches } from '@policygen/distribution';
import type { FetchRecorder } from '../relay/fetch-recorder';
import type { RelayIdentity } from './tokens';
import { FETCH_RECORDER, RELAY_IDENTITY } from './tokens';

const PROMISES_GENERATED = 'rules/cfengine-community/rudder-promises-generated';

/**
 * What nodes ask their relay. A node presents its token (`Authorization: Bearer <token>`); the
 * relay knows each served node's token digest from the feed. A node reads only its own bundle.
 * A bundle is served from the blob directory, by the file list of the node's latest entry, taken
 * once per request: blobs never change, so a request sees the old bundle or the new one whole.
 */
@Controller('nodes')
export class NodesController {
  constructor(
    @Inject(FEED_LOG) private readonly log: FeedLog,
    @Inject(BLOB_DIRECTORY) private readonly blobs: BlobDirectory,
    @Inject(RELAY_IDENTITY) private readonly identity: RelayIdentity,
    @Inject(FETCH_RECORDER) private readonly fetches: FetchRecorder,
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
    const bundle = this.authenticate(nodeId, authorization);
    const etag = `"${bundle.hash}"`;
    response.setHeader('etag', etag);
    response.setHeader('cache-control', 'no-cache');
    response.setHeader('x-policygen-revision', String(bundle.revision));
    this.fetches.fetched(nodeId, bundle);
    if (ifNoneMatch?.split(',').some((tag) => tag.trim() === etag)) {
      response.status(HttpStatus.NOT_MODIFIED).end();
      return;
    }
    if (accept?.includes('application/json')) {
      response.json({ nodeId, hash: bundle.hash, revision: bundle.revision, files: bundle.files });
      return;
    }
    const contents = await Promise.all(bundle.files.map((file) => this.blobs.read(file.sha256)));
    const archive = pack();
    const mtime = new Date(bundle.generatedAt);
    bundle.files.forEach((file, index) =>
      archive.entry({ name: file.path, mode: 0o644, mtime }, contents[index] ?? Buffer.alloc(0)),
    );
    archive.finalize();
    response.setHeader('content-type', 'application/x-tar');
    // A node that goes away mid-stream ends it; that is no error of this process.
    archive.on('error', () => undefined);
    archive.pipe(response);
  }

  /** When the served bundle was generated (epoch milliseconds), as Rudder's agents check it. */
  @Get(':id/rudder-promises-generated')
  async promisesGenerated(
    @Param('id') nodeId: string,
    @Headers('authorization') authorization: string | undefined,
    @Res() response: Response,
  ): Promise<void> {
    const bundle = this.authenticate(nodeId, authorization);
    const file = bundle.files.find((candidate) => candidate.path === PROMISES_GENERATED);
    if (!file) throw new NotFoundException(`the bundle ${bundle.hash} has no ${PROMISES_GENERATED}`);
    response.setHeader('etag', `"${bundle.hash}"`);
    response.type('text/plain').send(await this.blobs.read(file.sha256));
  }

  /** The bundle of the node the token belongs to: 401 without a valid token, 403 for another node. */
  private authenticate(nodeId: string, authorization: string | undefined): FeedBundle {
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
    if (!entry.bundle) throw new UnauthorizedException('this relay does not serve the node');
    return entry.bundle;
  }
}
