import type { Logger } from 'pino';
import { Counter } from 'prom-client';
import type { Registry } from 'prom-client';
import type {
  BlobDirectory,
  Confirmation,
  ConfirmationSink,
  FeedEntry,
  FeedLog,
} from '@policygen/distribution';
import { entryFor } from '@policygen/distribution';
import type { NodeTrees } from './node-trees';
import type { ParentClient } from './parent-client';

export interface FollowerOptions {
  readonly relayId: string;
  readonly parent: ParentClient;
  readonly log: FeedLog;
  readonly blobs: BlobDirectory;
  readonly trees: NodeTrees;
  readonly logger: Logger;
  readonly registry: Registry;
  /** How long one feed request may wait for news (default 25 s). */
  readonly pollWaitMs?: number;
  /** Blobs fetched from the parent at once (default 16). */
  readonly fetchConcurrency?: number;
}

export interface FollowerStatus {
  readonly cursor: number;
  readonly nodes: number;
  readonly blobs: number;
  readonly blobFetches: number;
  readonly lastSyncAt: string | null;
  readonly lastError: string | null;
}

/**
 * A relay's link to its parent: it long-polls its feed from the cursor on disk, fetches the blobs
 * it lacks, switches node trees, then records the entries (so a restart resumes after them and a
 * crash before only redoes them), and confirms its bundles upward with those of the relays below.
 */
export class Follower implements ConfirmationSink {
  private stopped = false;
  private running: Promise<void> | null = null;
  private abort = new AbortController();
  private fetches = 0;
  private lastSyncAt: string | null = null;
  private lastError: string | null = null;
  private outbox: Confirmation[] = [];
  private flushing: Promise<void> | null = null;
  private readonly blobFetches: Counter;

  constructor(private readonly options: FollowerOptions) {
    this.blobFetches = new Counter({
      name: 'policygen_relay_blob_fetches_total',
      help: 'Blobs this relay fetched from its parent',
      registers: [options.registry],
    });
  }

  status(): FollowerStatus {
    return {
      cursor: this.options.log.cursor,
      nodes: [...this.options.log.latestEntries()].filter(
        (entry) => entryFor(entry, this.options.relayId) === 'keep',
      ).length,
      blobs: this.options.blobs.count,
      blobFetches: this.fetches,
      lastSyncAt: this.lastSyncAt,
      lastError: this.lastError,
    };
  }

  start(): void {
    this.running ??= this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    await this.running;
    await this.flushing;
  }

  /** Confirmations of the relays below, passed up with this relay's own. */
  async confirm(confirmations: readonly Confirmation[]): Promise<void> {
    this.outbox.push(...confirmations);
    this.flushSoon();
  }

  private async run(): Promise<void> {
    let backoffMs = 250;
    while (!this.stopped) {
      try {
        const page = await this.options.parent.feed(
          this.options.log.cursor,
          this.options.pollWaitMs ?? 25_000,
          this.abort.signal,
        );
        await this.apply(page.entries);
        await this.options.log.append(page.entries, page.next);
        this.lastSyncAt = new Date().toISOString();
        this.lastError = null;
        backoffMs = 250;
      } catch (error) {
        if (this.stopped) break;
        this.lastError = (error as Error).message;
        this.options.logger.warn(
          { err: error, parent: this.options.parent.url },
          'feed sync failed; retrying',
        );
        await new Promise((resolve) => setTimeout(resolve, backoffMs));
        backoffMs = Math.min(backoffMs * 2, 5_000);
      }
    }
  }

  private async apply(entries: readonly FeedEntry[]): Promise<void> {
    const { relayId, blobs, trees } = this.options;
    const latest = new Map<string, FeedEntry>();
    for (const entry of entries) latest.set(entry.nodeId, entry);
    const missing = new Set<string>();
    for (const entry of latest.values())
      if (entryFor(entry, relayId) === 'keep')
        for (const file of entry.bundle?.files ?? []) if (!blobs.has(file.sha256)) missing.add(file.sha256);
    await this.fetchBlobs([...missing]);

    const confirmedAt = new Date().toISOString();
    const confirmations: Confirmation[] = [];
    for (const entry of latest.values()) {
      const meaning = entryFor(entry, relayId);
      if (meaning === 'drop') await trees.drop(entry.nodeId);
      if (meaning !== 'keep' || !entry.bundle) continue;
      await trees.keep(entry);
      const { hash, revision, committedAt, generatedAt, distributedAt } = entry.bundle;
      confirmations.push({
        relayId,
        nodeId: entry.nodeId,
        hash,
        revision,
        committedAt,
        generatedAt,
        distributedAt,
        confirmedAt,
      });
    }
    if (confirmations.length > 0) await this.confirm(confirmations);
  }

  private async fetchBlobs(digests: readonly string[]): Promise<void> {
    const concurrency = this.options.fetchConcurrency ?? 16;
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < digests.length) {
        const digest = digests[next++] ?? '';
        const content = await this.options.parent.blob(digest);
        await this.options.blobs.write(digest, content);
        this.fetches++;
        this.blobFetches.inc();
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, digests.length) }, worker));
  }

  private flushSoon(): void {
    this.flushing ??= (async () => {
      while (this.outbox.length > 0) {
        const batch = this.outbox.splice(0, 5_000);
        try {
          await this.options.parent.confirm(batch);
        } catch (error) {
          this.outbox.unshift(...batch);
          // Confirmations are about lag, not correctness: past this many, the oldest are let go.
          if (this.outbox.length > 200_000) this.outbox.splice(0, this.outbox.length - 200_000);
          this.options.logger.warn({ err: error }, 'confirmations not accepted by the parent; retrying');
          if (this.stopped) break;
          await new Promise((resolve) => setTimeout(resolve, 1_000));
        }
      }
      this.flushing = null;
    })();
  }
}
