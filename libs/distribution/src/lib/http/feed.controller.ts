import {
  BadRequestException,
  Body,
  Controller,
  ForbiddenException,
  Get,
  HttpCode,
  Inject,
  NotFoundException,
  Param,
  Post,
  Query,
  Res,
} from '@nestjs/common';
import { once } from 'node:events';
import type { Response } from 'express';
import { z } from 'zod';
import type { Principal } from '@policygen/service-kit';
import { Requires } from '@policygen/service-kit';
import type { BlobDirectory } from '../disk/blob-directory';
import type { FeedLog } from '../disk/feed-log';
import type { Confirmation, FeedEntry, FeedPage } from '../feed';
import { confirmationsSchema, entryFor, isSha256Hex } from '../feed';
import { deriveFile, derivesFiles, isDerivedPath } from '../derived-files';
import { TAR_END, tarHeader, tarPadding } from './tar-batch';
import type { RelayDirectory } from './feed-access';
import { Caller, RELAY_DIRECTORY } from './feed-access';

export const FEED_LOG = Symbol('FEED_LOG');
export const BLOB_DIRECTORY = Symbol('BLOB_DIRECTORY');
export const CONFIRMATION_SINK = Symbol('CONFIRMATION_SINK');

/** Where a relay's confirmations go: the root publishes them, a relay passes them up. */
export interface ConfirmationSink {
  confirm(confirmations: readonly Confirmation[]): Promise<void>;
}

const MAX_WAIT_MS = 60_000;
const MAX_PAGE = 5_000;
/** Bytes of blobs a page may carry (`inlineBytes`), and the largest blob given that way. */
export const MAX_INLINE_BYTES = 4 * 2 ** 20;
const MAX_INLINE_BLOB = 16 * 2 ** 10;
/** Blobs one `POST /blobs` may ask for. */
export const MAX_BLOB_BATCH = 1_000;
/** Blobs read (synchronously: small files, a promise each costs more) between turns of the event loop. */
const BLOB_READ_SLICE = 64;
const SHA256 = /^[0-9a-f]{64}$/;
/** Bytes of a blob batch's tar gathered before a write to the socket. */
const WRITE_PIECE = 256 * 2 ** 10;
const BLOCK = 512;
const PAGE_START = Buffer.from('{"entries":[');

/** A page's query parameters, as given (each checked where it is read). */
interface PageQuery {
  readonly after?: string;
  readonly waitMs?: string;
  readonly limit?: string;
  readonly inlineBytes?: string;
}

export const blobBatchSchema = z.object({
  digests: z.array(z.string().regex(SHA256, '64 lowercase hex digits')).min(1).max(MAX_BLOB_BATCH),
});

/**
 * What a parent (the distribution-service or a relay) serves the relays below it: each relay's
 * ordered feed of its subtree's entries, long-polled from a cursor, and the blobs by digest. Every
 * route wants a relay credential (the blobs also a node token): a relay reads its own feed and
 * confirms its own subtree's nodes, and reads the blobs its subtree's bundles name; a node reads
 * the blobs its own bundle names. Knowing a digest is no capability: a blob outside the caller's
 * scope is "not here" to a relay (as if absent: it learns nothing) and forbidden to a node.
 */
@Controller()
@Requires({ kinds: ['relay'] })
export class FeedController {
  constructor(
    @Inject(FEED_LOG) private readonly log: FeedLog,
    @Inject(BLOB_DIRECTORY) private readonly blobs: BlobDirectory,
    @Inject(CONFIRMATION_SINK) private readonly sink: ConfirmationSink,
    @Inject(RELAY_DIRECTORY) private readonly relays: RelayDirectory,
  ) {}

  /**
   * A page of the relay's feed (a `FeedPage`), written from the entries' lines as the log holds
   * them: stringifying thousands of entries again for every page was most of serving one.
   */
  @Get('feeds/:relayId')
  async feed(
    @Caller() caller: Principal,
    @Param('relayId') relayId: string,
    @Query() query: PageQuery,
    @Res() response: Response,
  ): Promise<void> {
    requireSelf(caller, relayId);
    await this.page(relayId, query, response);
  }

  /**
   * The same page, asked for with the confirmations of the page before (`{ confirmations }`, as
   * `POST …/confirmations` takes them): a node change then costs a relay one request to its parent,
   * not a page and a confirmation. They are checked and passed on before the page is waited for.
   */
  @Post('feeds/:relayId')
  @HttpCode(200)
  async feedConfirming(
    @Caller() caller: Principal,
    @Param('relayId') relayId: string,
    @Query() query: PageQuery,
    @Body() body: unknown,
    @Res() response: Response,
  ): Promise<void> {
    requireSelf(caller, relayId);
    await this.acceptConfirmations(relayId, body);
    await this.page(relayId, query, response);
  }

  private async page(relayId: string, query: PageQuery, response: Response): Promise<void> {
    const { after, waitMs, limit, inlineBytes } = query;
    const cursor = integerParameter('after', after, 0, Number.MAX_SAFE_INTEGER, 0);
    const wait = integerParameter('waitMs', waitMs, 0, MAX_WAIT_MS, 0);
    const size = integerParameter('limit', limit, 1, MAX_PAGE, 1_000);
    const inline = integerParameter('inlineBytes', inlineBytes, 0, MAX_INLINE_BYTES, 0);
    const deadline = Date.now() + wait;
    for (;;) {
      const slice = this.log.afterAsJson(cursor, relayId, size);
      const remaining = deadline - Date.now();
      if (slice.count > 0 || remaining <= 0 || this.log.closed) {
        const blobs = inline > 0 ? this.inlineBlobs(slice.entries, relayId, inline) : undefined;
        const rest: Omit<FeedPage, 'entries'> = {
          next: slice.next,
          head: { seq: this.log.cursor, revision: this.log.latestRevision },
          relays: [...this.relays.below(relayId)],
          ...(blobs ? { blobs } : {}),
        };
        const body = Buffer.concat([
          PAGE_START,
          slice.json,
          Buffer.from(`],${JSON.stringify(rest).slice(1)}`),
        ]);
        response.writeHead(200, {
          'content-type': 'application/json; charset=utf-8',
          'content-length': body.length,
        });
        response.end(body);
        return;
      }
      await this.log.waitForAppend(remaining);
    }
  }

  /**
   * The blobs to give with a page: those of the bundles the relay keeps that their entry was the
   * first to name (no bundle served before named them, so no relay holds them from an earlier
   * page) — a node's own new files, and a file new with a change that several nodes share, given
   * once with the first entry that names it — small ones, up to `budget` bytes in all. A node change then
   * reaches a relay in one request, not a page and a blob request; a blob the relay holds already
   * costs only its bytes, one it lacks and was not given is asked for as before.
   */
  private inlineBlobs(
    entries: readonly FeedEntry[],
    relayId: string,
    budget: number,
  ): Record<string, string> | undefined {
    const blobs: Record<string, string> = {};
    let bytes = 0;
    let given = 0;
    for (const entry of entries) {
      if (!entry.bundle || entryFor(entry, relayId) !== 'keep') continue;
      // The digests new with this entry, not its ~35 files: a node change brings one or two.
      for (const digest of this.log.freshDigests(entry.seq)) {
        if (digest in blobs) continue;
        const size = this.blobs.sizeOf(digest);
        if (size === undefined || size > MAX_INLINE_BLOB || bytes + size > budget) continue;
        try {
          blobs[digest] = this.blobs.readNow(digest).toString('base64');
        } catch {
          // Gone meanwhile (dropped, collected): the relay asks for it as for any other.
          continue;
        }
        bytes += size;
        given++;
      }
    }
    return given > 0 ? blobs : undefined;
  }

  @Post('feeds/:relayId/confirmations')
  @HttpCode(202)
  async confirm(
    @Caller() caller: Principal,
    @Param('relayId') relayId: string,
    @Body() body: unknown,
  ): Promise<{ accepted: number }> {
    requireSelf(caller, relayId);
    return { accepted: await this.acceptConfirmations(relayId, body) };
  }

  /** Checks a relay's confirmations (400: not confirmations; 403: outside its subtree) and passes them on. */
  private async acceptConfirmations(relayId: string, body: unknown): Promise<number> {
    const parsed = confirmationsSchema.safeParse(body);
    if (!parsed.success) throw invalid('invalid confirmations', parsed.error.issues);
    const outside = parsed.data.confirmations.filter(
      (confirmation) => !this.confirmable(confirmation, relayId),
    );
    if (outside.length > 0)
      throw new ForbiddenException({
        message: `${outside.length} of the confirmations concern relays or nodes outside the subtree of relay ${relayId}`,
        outside: outside.slice(0, 10).map(({ relayId: by, nodeId }) => ({ relayId: by, nodeId })),
      });
    if (parsed.data.confirmations.length > 0) await this.sink.confirm(parsed.data.confirmations);
    return parsed.data.confirmations.length;
  }

  /**
   * Many blobs in one response: a tar stream whose entries are named by digest, in the order asked
   * (each digest once). All must be held, or 404 names the ones that are not, before anything is sent.
   */
  @Post('blobs')
  @HttpCode(200)
  @Requires({ kinds: ['relay', 'node'] })
  async blobBatch(
    @Caller() caller: Principal,
    @Body() body: unknown,
    @Res() response: Response,
  ): Promise<void> {
    const digests = [...new Set(blobBatchOf(body))];
    if (caller.kind === 'node') {
      const named = this.namedByBundleOf(caller.nodeId);
      const foreign = digests.filter((digest) => !named.has(digest));
      if (foreign.length > 0)
        throw new ForbiddenException(
          `${foreign.length} of the blobs asked for are not named by node ${caller.nodeId}'s bundle`,
        );
    }
    const derived = new Map<string, Buffer>();
    for (const digest of digests)
      if (this.mayRead(caller, digest) && !this.blobs.has(digest)) {
        const content = await this.derivedContent(caller, digest);
        if (content) derived.set(digest, content);
      }
    const missing = digests.filter(
      (digest) => !this.mayRead(caller, digest) || (!this.blobs.has(digest) && !derived.has(digest)),
    );
    if (missing.length > 0)
      throw new NotFoundException({
        message: `${missing.length} of the blobs asked for are not here`,
        missing,
      });
    response.setHeader('content-type', 'application/x-tar');
    response.setHeader('x-policygen-blob-count', String(digests.length));
    // A reader that goes away mid-stream ends it; that is no error of this process.
    response.on('error', () => undefined);
    // Written in pieces of many blobs: a write per blob's header, content and padding cost more than the reads.
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    const send = (): boolean => {
      const ok = response.write(pending.length === 1 ? pending[0] : Buffer.concat(pending, pendingBytes));
      pending = [];
      pendingBytes = 0;
      return ok;
    };
    try {
      for (const [index, digest] of digests.entries()) {
        const content = derived.get(digest) ?? this.blobs.readNow(digest);
        pending.push(tarHeader(digest, content.length), content, tarPadding(content.length));
        pendingBytes += BLOCK + content.length + tarPadding(content.length).length;
        if (pendingBytes >= WRITE_PIECE && !send())
          await Promise.race([once(response, 'drain'), once(response, 'close')]);
        else if (index % BLOB_READ_SLICE === BLOB_READ_SLICE - 1) await new Promise(setImmediate);
        if (response.destroyed) return;
      }
      pending.push(TAR_END);
      response.end(Buffer.concat(pending));
    } catch (error) {
      // Headers are gone: a cut stream is how the reader learns (its tar is incomplete).
      response.destroy(error as Error);
    }
  }

  /** One blob, read whole (blobs are small files) and sent as it is. */
  @Get('blobs/:sha256')
  @Requires({ kinds: ['relay', 'node'] })
  async blob(
    @Caller() caller: Principal,
    @Param('sha256') sha256: string,
    @Res() response: Response,
  ): Promise<void> {
    if (!SHA256.test(sha256)) throw new BadRequestException('sha256: 64 lowercase hex digits');
    if (caller.kind === 'node' && !this.namedByBundleOf(caller.nodeId).has(sha256))
      throw new ForbiddenException(`the blob is not named by node ${caller.nodeId}'s bundle`);
    if (!this.mayRead(caller, sha256)) throw new NotFoundException(`no blob ${sha256}`);
    let content: Buffer;
    try {
      const derived = this.blobs.has(sha256) ? null : await this.derivedContent(caller, sha256);
      content = derived ?? (await this.blobs.read(sha256));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT')
        throw new NotFoundException(`no blob ${sha256}`);
      throw error;
    }
    response.writeHead(200, {
      'content-type': 'application/octet-stream',
      'content-length': content.length,
      etag: `"${sha256}"`,
      'cache-control': 'public, max-age=31536000, immutable',
    });
    response.end(content);
  }

  /**
   * A file derived where nodes are served (derived-files.ts: a manifest, a generation time), asked
   * for by digest as if it were a blob — by a relay or a reader older than them — put together from
   * a latest bundle the caller may read that names it; null when none does. A scan of the latest
   * entries: today's relays never ask, so this is the rare path.
   */
  private async derivedContent(caller: Principal, digest: string): Promise<Buffer | null> {
    const read = (sha256: string): Promise<Buffer> => this.blobs.read(sha256);
    const candidates =
      caller.kind === 'node'
        ? [this.log.latest(caller.nodeId)]
        : caller.kind === 'relay'
          ? this.log.latestEntries()
          : [];
    for (const entry of candidates) {
      const bundle = entry?.bundle;
      if (!entry || !bundle || !derivesFiles(bundle)) continue;
      const file = bundle.files.find((listed) => listed.sha256 === digest && isDerivedPath(listed.path));
      if (file) return deriveFile(entry.nodeId, bundle, file, read);
    }
    return null;
  }

  /** Whether a relay's subtree, or a node's bundle, names the blob (an API token: never). */
  private mayRead(caller: Principal, digest: string): boolean {
    if (caller.kind === 'relay') return this.log.referencedBelow(digest, caller.relayId);
    return caller.kind === 'node' && this.namedByBundleOf(caller.nodeId).has(digest);
  }

  /** The blobs of the node's latest bundle, where it is served (none when it has none or is served nowhere). */
  private namedByBundleOf(nodeId: string): ReadonlySet<string> {
    const entry = this.log.latest(nodeId);
    if (!entry?.bundle || entry.path.length === 0) return new Set();
    return new Set(entry.bundle.files.map((file) => file.sha256));
  }

  /**
   * A confirmation `relayId` may pass up: from itself or a relay below it, about a node that relay
   * serves or served (a node that just moved away is still confirmed for what it was given).
   */
  private confirmable(confirmation: Confirmation, relayId: string): boolean {
    if (!this.relays.within(confirmation.relayId, relayId)) return false;
    const entry = this.log.latest(confirmation.nodeId);
    return (
      !!entry &&
      (entry.path.includes(confirmation.relayId) || entry.previousPath.includes(confirmation.relayId))
    );
  }
}

/**
 * The digests a `POST /blobs` asks for. A plain request (only `digests`, each 64 lowercase hex
 * digits) is read by hand: a regular expression per digest was most of reading one; any other is
 * left to the schema, which explains what is wrong with it.
 */
export function blobBatchOf(body: unknown): string[] {
  const digests = (body as { digests?: unknown } | null)?.digests;
  if (
    typeof body === 'object' &&
    body !== null &&
    Object.keys(body).length === 1 &&
    Array.isArray(digests) &&
    digests.length >= 1 &&
    digests.length <= MAX_BLOB_BATCH &&
    digests.every(isSha256Hex)
  )
    return digests as string[];
  const parsed = blobBatchSchema.safeParse(body);
  if (!parsed.success) throw invalid('invalid blob request', parsed.error.issues);
  return parsed.data.digests;
}

/** A relay reads and confirms its own feed only. */
function requireSelf(caller: Principal, relayId: string): void {
  if (caller.kind !== 'relay' || caller.relayId !== relayId)
    throw new ForbiddenException(
      caller.kind === 'relay'
        ? `relay ${caller.relayId} may read and confirm only its own feed`
        : 'feeds are for relay credentials',
    );
}

function invalid(message: string, issues: readonly z.core.$ZodIssue[]): BadRequestException {
  return new BadRequestException({
    message,
    issues: issues.map((issue) => ({ path: ['$', ...issue.path].join('.'), message: issue.message })),
  });
}

function integerParameter(
  name: string,
  text: string | undefined,
  min: number,
  max: number,
  fallback: number,
): number {
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max)
    throw new BadRequestException(`${name}: an integer from ${min} to ${max}, not "${text}"`);
  return value;
}
