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
  ServiceUnavailableException,
  UnauthorizedException,
} from '@nestjs/common';
import type { Response } from 'express';
import { pack } from 'tar-stream';
import type { Principal } from '@policygen/service-kit';
import { Requires } from '@policygen/service-kit';
import { treeFiles } from '../derived-files';
import type { FeedBundle } from '../feed';
import { Caller } from '../http/feed-access';
import { addTarEntry } from '../http/tar-stream-entry';
import type { FetchRecorder } from './fetch-recorder';
import type { NodeTrees } from './node-trees';
import { TreeIncompleteError } from './node-trees';

export const NODE_TREES = Symbol('NODE_TREES');
export const FETCH_RECORDER = Symbol('FETCH_RECORDER');

const PROMISES_GENERATED = 'rules/cfengine-community/rudder-promises-generated';
/** When a node that found its bundle's files missing here should ask again: they are being fetched. */
const RETRY_AFTER_SECONDS = 5;

/**
 * What nodes ask their relay (or the distribution-service, which serves the root's). A node presents its token (`Authorization: Bearer <token>`), which
 * the credential guard checks with the node's key from the feed, expiry included (401 otherwise,
 * and for a node this relay does not serve). A node reads only its own bundle (403 otherwise).
 * A bundle is served from the blob directory, by the file list of the node's latest entry, taken
 * once per request: blobs never change, so a request sees the old bundle or the new one whole
 * (node-trees.ts); files missing on this relay answer 503 with Retry-After, never 500.
 */
@Controller('nodes')
@Requires({ kinds: ['node'] })
export class NodesController {
  constructor(
    @Inject(NODE_TREES) private readonly trees: NodeTrees,
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
    const served = this.servedBundle(caller, nodeId);
    const json = accept?.includes('application/json') === true;
    const notModified = ifNoneMatch?.split(',').some((tag) => tag.trim() === `"${served.hash}"`) === true;
    const tree = json || notModified ? null : await available(this.trees.read(nodeId, served), response);
    const bundle = tree?.bundle ?? served;
    response.setHeader('etag', `"${bundle.hash}"`);
    response.setHeader('cache-control', 'no-cache');
    response.setHeader('x-policygen-revision', String(bundle.revision));
    this.fetches.fetched(nodeId, bundle);
    if (notModified) {
      response.status(HttpStatus.NOT_MODIFIED).end();
      return;
    }
    if (!tree) {
      response.json({ nodeId, hash: bundle.hash, revision: bundle.revision, files: treeFiles(bundle) });
      return;
    }
    const archive = pack();
    const mtime = new Date(bundle.generatedAt);
    tree.files.forEach((file, index) =>
      addTarEntry(archive, { name: file.path, mode: 0o644, mtime }, tree.contents[index] ?? Buffer.alloc(0)),
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
    const content = await available(this.trees.file(nodeId, bundle, PROMISES_GENERATED), response);
    if (!content) throw new NotFoundException(`the bundle ${bundle.hash} has no ${PROMISES_GENERATED}`);
    response.setHeader('etag', `"${bundle.hash}"`);
    response.type('text/plain').send(content);
  }

  /** The bundle of the calling node: 403 for another node's, 401 once this relay no longer serves it. */
  private servedBundle(caller: Principal, nodeId: string): FeedBundle {
    if (caller.kind !== 'node' || caller.nodeId !== nodeId)
      throw new ForbiddenException('a node may read only its own policies');
    const bundle = this.trees.bundleOf(nodeId);
    // The guard let the node in a moment ago: only a feed entry applied since can make this fail.
    if (!bundle) throw new UnauthorizedException(`relay ${this.trees.relayId} does not serve node ${nodeId}`);
    return bundle;
  }
}

/** A read of files this relay lacks for now: 503 with Retry-After, for the node to come back. */
async function available<T>(read: Promise<T>, response: Response): Promise<T> {
  try {
    return await read;
  } catch (error) {
    if (!(error instanceof TreeIncompleteError)) throw error;
    response.setHeader('retry-after', String(RETRY_AFTER_SECONDS));
    throw new ServiceUnavailableException(error.message);
  }
}
