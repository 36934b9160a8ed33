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
import type { Response } from 'express';
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
        return { entries: [...slice.entries], next: slice.next };
      await this.log.waitForAppend(remaining);
    }
  }

  @Post('feeds/:relayId/confirmations')
  @HttpCode(202)
  async confirm(@Param('relayId') relayId: string, @Body() body: unknown): Promise<{ accepted: number }> {
    const parsed = confirmationsSchema.safeParse(body);
    if (!parsed.success)
      throw new BadRequestException({
        message: 'invalid confirmations',
        issues: parsed.error.issues.map((issue) => ({
          path: ['$', ...issue.path].join('.'),
          message: issue.message,
        })),
      });
    await this.sink.confirm(parsed.data.confirmations);
    return { accepted: parsed.data.confirmations.length };
  }

  @Get('blobs/:sha256')
  blob(@Param('sha256') sha256: string, @Res() response: Response): void {
    if (!/^[0-9a-f]{64}$/.test(sha256)) throw new BadRequestException('sha256: 64 lowercase hex digits');
    if (!this.blobs.has(sha256)) throw new NotFoundException(`no blob ${sha256}`);
    response.setHeader('content-type', 'application/octet-stream');
    response.setHeader('etag', `"${sha256}"`);
    response.setHeader('cache-control', 'public, max-age=31536000, immutable');
    response.sendFile(this.blobs.path(sha256));
  }
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
