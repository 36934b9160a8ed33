import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { Counter } from 'prom-client';
import type { BlobDirectory } from './blob-directory';
import type { FeedLog } from './feed-log';

export interface BlobCollectorOptions {
  readonly blobs: BlobDirectory;
  readonly log: FeedLog;
  /** A relay counts the blobs of the nodes it keeps; without it (the root), every latest bundle's. */
  readonly relayId?: string;
  /** How long a blob stays unreferenced before it is deleted: readers of an older bundle finish first. */
  readonly graceMs: number;
  readonly registry?: Registry;
  readonly logger?: Logger;
  /** The clock (epoch ms), injectable for tests. */
  readonly now?: () => number;
}

/**
 * Deletes the blobs no node's latest entry references any more, once they have been unreferenced
 * for the grace period: a node still reading its previous bundle, a relay below still syncing it,
 * or a writer about to reference a blob again (it asked `has`) keeps it.
 */
export class BlobCollector {
  private readonly unreferencedSince = new Map<string, number>();
  private readonly collected: Counter | null;
  private timer: NodeJS.Timeout | null = null;
  private sweeping: Promise<number> | null = null;

  constructor(private readonly options: BlobCollectorOptions) {
    options.blobs.takeTouched();
    this.collected = options.registry
      ? new Counter({
          name: 'policygen_blobs_collected_total',
          help: 'Blobs deleted after being unreferenced for the grace period',
          registers: [options.registry],
        })
      : null;
  }

  /** Blobs seen unreferenced, waiting for their grace period to end. */
  get pending(): number {
    return this.unreferencedSince.size;
  }

  /** One pass: marks newly unreferenced blobs, deletes those past the grace period; resolves with how many. */
  sweep(): Promise<number> {
    this.sweeping ??= this.collect().finally(() => {
      this.sweeping = null;
    });
    return this.sweeping;
  }

  /** Sweeps every `intervalMs` (default: a tenth of the grace period, from 1 s to 1 min). */
  start(intervalMs = Math.min(60_000, Math.max(1_000, this.options.graceMs / 10))): void {
    this.timer ??= setInterval(() => {
      this.sweep().catch((error: unknown) =>
        this.options.logger?.warn({ err: error }, 'blob collection failed'),
      );
    }, intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.sweeping;
  }

  private async collect(): Promise<number> {
    const { blobs, log, relayId, graceMs } = this.options;
    const now = (this.options.now ?? Date.now)();
    const touched = blobs.takeTouched();
    let counted = 0;
    const expired: string[] = [];
    for (const digest of blobs.digests()) {
      if (++counted % 50_000 === 0) await yieldToEventLoop();
      // The log's reference counts, kept as entries come (the root keeps every latest bundle's blobs,
      // a relay those of the bundles it keeps): walking every latest entry's ~35 files at each pass
      // cost more than the rest of a relay.
      const referenced =
        relayId === undefined ? log.referencedAnywhere(digest) : log.referencedBelow(digest, relayId);
      if (referenced || touched.has(digest)) {
        this.unreferencedSince.delete(digest);
        continue;
      }
      const since = this.unreferencedSince.get(digest);
      if (since === undefined) this.unreferencedSince.set(digest, now);
      else if (now - since >= graceMs) expired.push(digest);
    }
    let deleted = 0;
    for (const digest of expired) {
      if (await blobs.deleteUnlessTouched(digest)) deleted++;
      this.unreferencedSince.delete(digest);
    }
    if (deleted > 0) {
      this.collected?.inc(deleted);
      this.options.logger?.info(
        { deleted, pending: this.unreferencedSince.size },
        'unreferenced blobs collected',
      );
    }
    return deleted;
  }
}

function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
