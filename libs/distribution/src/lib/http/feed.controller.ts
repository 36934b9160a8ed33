import {
  BadRequestException,
  Body,
  Controller,
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
import { pack } from 'tar-stream';
import { z } from 'zod';
import type { BlobDirectory } from '../disk/blob-directory';
import type { FeedLog } from '../disk/feed-log';
import type { Confirmation, FeedPage } from '../feed';
import { confirmationsSchema } from '../feed';

export const FEED_LOG = Symbol('FEED_LOG');
export const BLOB_DIRECTORY = Symbol('BLOB_DIRECTORY');
export const CONFIRMATION_SINK = Symbol('CONFIRMATION_SINK');

/** Where a relay's confirmations go: the root publishes them, a relay passes them up. */
export interface ConfirmationSink {
  confirm(confirmations: readonly Confirmation[]): Promise<void>;
}

const MAX_WAIT_MS = 60_000;
const MAX_PAGE = 5_000;
/** Blobs one `POST /blobs` may ask for. */
export const MAX_BLOB_BATCH = 1_000;
/** Blobs read (synchronously: small files, a promise each costs more) between turns of the event loop. */
const BLOB_READ_SLICE = 64;
const SHA256 = /^[0-9a-f]{64}$/;
const EPOCH = new Date(0);

const blobBatchSchema = z.object({
  digests: z.array(z.string().regex(SHA256, '64 lowercase hex digits')).min(1).max(MAX_BLOB_BATCH),
});

/**
 * What a parent (the distribution-service or a relay) serves the relays below it: each relay's
 * ordered feed of its subtree's entries, long-polled from a cursor, and the blobs by digest.
 */
@Controller()
export class FeedController {
  constructor(
    @Inject(FEED_LOG) private readonly log: FeedLog,
    @Inject(BLOB_DIRECTORY) private readonly blobs: BlobDirectory,
    @Inject(CONFIRMATION_SINK) private readonly sink: ConfirmationSink,
  ) {}

  @Get('feeds/:relayId')
  async feed(
    @Param('relayId') relayId: string,
    @Query('after') after: string | undefined,
    @Query('waitMs') waitMs: string | undefined,
    @Query('limit') limit: string | undefined,
  ): Promise<FeedPage> {
    const cursor = integerParameter('after', after, 0, Number.MAX_SAFE_INTEGER, 0);
    const wait = integerParameter('waitMs', waitMs, 0, MAX_WAIT_MS, 0);
    const size = integerParameter('limit', limit, 1, MAX_PAGE, 1_000);
    const deadline = Date.now() + wait;
    for (;;) {
      const slice = this.log.after(cursor, relayId, size);
      const remaining = deadline - Date.now();
      if (slice.entries.length > 0 || remaining <= 0 || this.log.closed)
        return {
          entries: [...slice.entries],
          next: slice.next,
          head: { seq: this.log.cursor, revision: this.log.latestRevision },
        };
      await this.log.waitForAppend(remaining);
    }
  }

  @Post('feeds/:relayId/confirmations')
  @HttpCode(202)
  async confirm(@Param('relayId') relayId: string, @Body() body: unknown): Promise<{ accepted: number }> {
    const parsed = confirmationsSchema.safeParse(body);
    if (!parsed.success) throw invalid('invalid confirmations', parsed.error.issues);
    await this.sink.confirm(parsed.data.confirmations);
    return { accepted: parsed.data.confirmations.length };
  }

  /**
   * Many blobs in one response: a tar stream whose entries are named by digest, in the order asked
   * (each digest once). All must be held, or 404 names the ones that are not, before anything is sent.
   */
  @Post('blobs')
  @HttpCode(200)
  async blobBatch(@Body() body: unknown, @Res() response: Response): Promise<void> {
    const parsed = blobBatchSchema.safeParse(body);
    if (!parsed.success) throw invalid('invalid blob request', parsed.error.issues);
    const digests = [...new Set(parsed.data.digests)];
    const missing = digests.filter((digest) => !this.blobs.has(digest));
    if (missing.length > 0)
      throw new NotFoundException({
        message: `${missing.length} of the blobs asked for are not here`,
        missing,
      });
    response.setHeader('content-type', 'application/x-tar');
    response.setHeader('x-policygen-blob-count', String(digests.length));
    const archive = pack();
    // A reader that goes away mid-stream ends it; that is no error of this process.
    archive.on('error', () => undefined);
    archive.pipe(response);
    try {
      for (const [index, digest] of digests.entries()) {
        archive.entry({ name: digest, mode: 0o644, mtime: EPOCH }, this.blobs.readNow(digest));
        if (response.writableNeedDrain)
          await Promise.race([once(response, 'drain'), once(response, 'close')]);
        else if (index % BLOB_READ_SLICE === BLOB_READ_SLICE - 1) await new Promise(setImmediate);
        if (response.destroyed) return;
      }
      archive.finalize();
    } catch (error) {
      // Headers are gone: a cut stream is how the reader learns (its tar is incomplete).
      response.destroy(error as Error);
    }
  }

  /** One blob, read whole (blobs are small files) and sent as it is. */
  @Get('blobs/:sha256')
  async blob(@Param('sha256') sha256: string, @Res() response: Response): Promise<void> {
    if (!SHA256.test(sha256)) throw new BadRequestException('sha256: 64 lowercase hex digits');
    if (!this.blobs.has(sha256)) throw new NotFoundException(`no blob ${sha256}`);
    let content: Buffer;
    try {
      content = await this.blobs.read(sha256);
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
