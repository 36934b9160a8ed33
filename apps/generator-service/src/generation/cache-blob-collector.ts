import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { Counter } from 'prom-client';
import type { BundleCache } from '@policygen/cache';

export interface CacheBlobCollectorOptions {
  readonly cache: BundleCache;
  /**
   * How long a blob no record names stays: a consumer reading an older event finishes first, and a
   * publisher that remembers a blob as stored remembers it for less than this (see BundlePublisher).
   */
  readonly graceMs: number;
  readonly registry?: Registry;
  readonly logger?: Logger;
  /** The clock (epoch ms), injectable for tests. */
  readonly now?: () => number;
}

/** Blobs deleted per call of the cache, so that a large backlog never holds Redis for long. */
const BATCH = 5_000;

/**
 * Deletes from the bundle cache the file contents no node's bundle names any more, once their grace
 * period is over: without it, every generation leaves a manifest and a timestamp file behind for
 * good. Every generator instance may run one; the cache decides blob by blob, atomically.
 */
export class CacheBlobCollector {
  private readonly collected: Counter | null;
  private timer: NodeJS.Timeout | null = null;
  private sweeping: Promise<number> | null = null;

  constructor(private readonly options: CacheBlobCollectorOptions) {
    this.collected = options.registry
      ? new Counter({
          name: 'policygen_generator_cache_blobs_collected_total',
          help: 'Blobs deleted from the bundle cache after being named by no bundle for the grace period',
          registers: [options.registry],
        })
      : null;
  }

  /** One pass over what is due; resolves with how many blobs went. */
  sweep(): Promise<number> {
    this.sweeping ??= this.collect().finally(() => {
      this.sweeping = null;
    });
    return this.sweeping;
  }

  /** Sweeps every `intervalMs` (default: a tenth of the grace period, from 1 s to 5 min). */
  start(intervalMs = Math.min(300_000, Math.max(1_000, this.options.graceMs / 10))): void {
    this.timer ??= setInterval(() => {
      this.sweep().catch((error: unknown) =>
        this.options.logger?.warn({ err: error }, 'collecting the bundle cache blobs failed; retrying later'),
      );
    }, intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.sweeping?.catch(() => undefined);
  }

  private async collect(): Promise<number> {
    const unreferencedBefore = (this.options.now ?? Date.now)() - this.options.graceMs;
    let total = 0;
    for (;;) {
      const collected = await this.options.cache.collectBlobs({ unreferencedBefore, limit: BATCH });
      total += collected;
      this.collected?.inc(collected);
      if (collected < BATCH) break;
    }
    if (total > 0) this.options.logger?.info({ collected: total }, 'bundle cache blobs collected');
    return total;
  }
}
