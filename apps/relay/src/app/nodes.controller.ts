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
import { BLOB_DIRECTORY, Caller, FEED_LOG, entryFor } from '@policygen/distribution';
import type { Principal } from '@policygen/service-kit';
import { Requires } from '@policygen/service-kit';
import type { FetchRecorder } from '../relay/fetch-recorder';
import type { RelayIdentity } from './tokens';
import { FETCH_RECORDER, RELAY_IDENTITY } from './tokens';

const PROMISES_GENERATED = 'rules/cfengine-community/rudder-promises-generated';

/**
 * What nodes ask their relay. A node presents its token (`Authorization: Bearer <token>`), which
 * the credential guard checks with the node's key from the feed, expiry included (401 otherwise,
 * and for a node this relay does not serve). A node reads only its own bundle (403 otherwise).
 * A bundle is served from the blob directory, by the file list of the node's latest entry, taken
 * once per request: blobs never change, so a request sees the old bundle or the new one whole.
 */
@Controller('nodes')
@Requires({ kinds: ['node'] })
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
    @Caller() caller: Principal,
    @Param('id') nodeId: string,
    @Headers('if-none-match') ifNoneMatch: string | undefined,
    @Headers('accept') accept: string | undefined,
    @Res() response: Response,
  ): Promise<void> {
    const bundle = this.servedBundle(caller, nodeId);
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
    @Caller() caller: Principal,
    @Param('id') nodeId: string,
    @Res() response: Response,
  ): Promise<void> {
    const bundle = this.servedBundle(caller, nodeId);
    const file = bundle.files.find((candidate) => candidate.path === PROMISES_GENERATED);
    if (!file) throw new NotFoundException(`the bundle ${bundle.hash} has no ${PROMISES_GENERATED}`);
    response.setHeader('etag', `"${bundle.hash}"`);
    response.type('text/plain').send(await this.blobs.read(file.sha256));
  }

  /** The bundle of the calling node: 403 for another node's, 401 once this relay no longer serves it. */
  private servedBundle(caller: Principal, nodeId: string): FeedBundle {
    if (caller.kind !== 'node' || caller.nodeId !== nodeId)
      throw new ForbiddenException('a node may read only its own policies');
    const entry = this.log.latest(nodeId);
    // The guard let the node in a moment ago: only a feed entry applied since can make this fail.
    if (!entry?.bundle || entryFor(entry, this.identity.relayId) !== 'keep')
      throw new UnauthorizedException(`relay ${this.identity.relayId} does not serve node ${nodeId}`);
    return entry.bundle;
  }
}
