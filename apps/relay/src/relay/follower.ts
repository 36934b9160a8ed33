import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { Counter, Gauge } from 'prom-client';
import type { Registry } from 'prom-client';
import type {
  Blob,
  BlobDirectory,
  Confirmation,
  ConfirmationSink,
  FeedEntry,
  FeedLog,
  FeedPage,
  SubtreeRelay,
} from '@policygen/distribution';
import { addMissingBlobs, blobFiles, confirmationsOf, entryFor } from '@policygen/distribution';
import type { ReadinessAnswer } from '@policygen/service-kit';
import type { ParentClient, ReadFeedPage } from './parent-client';
import { MissingBlobsError, RefusedByParentError } from './parent-client';

/** What the follower asks of its parent (ParentClient over HTTP). */
/** Confirmations one page request carries at the most (as one confirmation request does). */
const MAX_RIDING = 5_000;
/** Confirmations kept while the parent does not take them, at the most. */
const MAX_WAITING = 200_000;

export type Parent = Pick<ParentClient, 'url' | 'feed' | 'blobs' | 'confirm'>;

const INLINE_BYTES = 2 ** 20;

export interface FollowerOptions {
  readonly relayId: string;
  readonly parent: Parent;
  readonly log: FeedLog;
  readonly blobs: BlobDirectory;
  readonly logger: Logger;
  readonly registry: Registry;
  /** How long one feed request may wait for news (default 25 s). */
  readonly pollWaitMs?: number;
  /** Entries asked for per feed page (default 5,000, the parent's most). */
  readonly pageSize?: number;
  /** Blobs asked for per request (default 500). */
  readonly blobBatch?: number;
  /** Bytes of small new blobs the parent may give with each page (default 1 MiB; 0: none). */
  readonly inlineBytes?: number;
  /** Blob requests under way at once (default 4). */
  readonly fetchConcurrency?: number;
  /** Told of the relays below this one as each feed page names them (with their credentials' digests). */
  readonly onSubtreeRelays?: (relays: readonly SubtreeRelay[]) => Promise<void>;
}

export interface FollowerStatus {
  readonly cursor: number;
  readonly nodes: number;
  readonly blobs: number;
  readonly blobFetches: number;
  readonly lastSyncAt: string | null;
  readonly lastError: string | null;
  /** Where the parent's feed stood at the last answer, and how far behind it this relay is. */
  readonly parent: { readonly seq: number; readonly revision: number } | null;
  readonly entriesBehind: number | null;
  readonly revisionsBehind: number | null;
}

/** How long the parent may stay unreachable before the relay says it is cut off (not ready). */
const CUT_OFF_AFTER_MS = 15_000;

/**
 * A relay's link to its parent: it long-polls its feed from the cursor on disk, a page at a time;
 * fetches the page's missing blobs in a few batched requests; then appends the page to its log,
 * which is the switch (a node is served from its latest entry's blobs, so it sees the old bundle
 * or the new one), and a restart resumes after it (a crash before only redoes the page, with no
 * blob fetched twice); and confirms the page's bundles upward with those of the relays below.
 * The next page is asked for while a full page's blobs are being fetched.
 */
export class Follower implements ConfirmationSink {
  private stopped = false;
  private running: Promise<void> | null = null;
  private abort = new AbortController();
  private fetches = 0;
  private lastSyncAt: string | null = null;
  private lastError: string | null = null;
  private failingSince: number | null = null;
  private parentHead: { readonly seq: number; readonly revision: number } | null = null;
  private caughtUp = false;
  private outbox: Confirmation[] = [];
  /** This relay's own confirmations of the pages applied, for the next page request to carry. */
  private readonly riding: Confirmation[] = [];
  /**
   * Blobs a kept entry names that opening dropped as torn and the parent could not give again:
   * the one exception to "a kept latest entry's blobs are held", which `missingBlobs` relies on.
   */
  private readonly unheld = new Set<string>();
  private flushing: Promise<void> | null = null;
  private readonly blobFetches: Counter;
  private readonly entriesLeftOut: Counter;
  private readonly confirmationsDropped: Counter<'status'>;

  constructor(private readonly options: FollowerOptions) {
    this.blobFetches = new Counter({
      name: 'policygen_relay_blob_fetches_total',
      help: 'Blobs this relay fetched from its parent',
      registers: [options.registry],
    });
    this.entriesLeftOut = new Counter({
      name: 'policygen_relay_entries_left_out_total',
      help: 'Feed entries skipped because the parent no longer held their files (the node keeps its bundle)',
      registers: [options.registry],
    });
    this.confirmationsDropped = new Counter({
      name: 'policygen_relay_confirmations_dropped_total',
      help: 'Confirmations the parent refused as they were (4xx but 401, 408, 429), let go instead of sent again, by status',
      labelNames: ['status'],
      registers: [options.registry],
    });
    this.gaugeBehind(
      'policygen_relay_feed_entries_behind',
      "Feed positions between this relay's cursor and its parent's head (0: in sync)",
      (head) => head.seq - options.log.cursor,
    );
    this.gaugeBehind(
      'policygen_relay_revisions_behind',
      'Revisions between the newest this relay holds and the newest its parent holds (0: in sync)',
      (head) => head.revision - options.log.latestRevision,
    );
  }

  /** A gauge read at each scrape from the parent's last known head; absent until the parent answered. */
  private gaugeBehind(
    name: string,
    help: string,
    measure: (head: { readonly seq: number; readonly revision: number }) => number,
  ): void {
    const gauge: Gauge<'relay'> = new Gauge({
      name,
      help,
      labelNames: ['relay'],
      registers: [this.options.registry],
      collect: () => {
        gauge.reset();
        if (this.parentHead)
          gauge.set({ relay: this.options.relayId }, Math.max(0, measure(this.parentHead)));
      },
    });
  }

  /**
   * Ready once it has caught up with its parent (its last page was not a full one); not ready
   * while the parent has been unreachable for a while: its nodes may be served stale bundles.
   */
  readiness(now = Date.now()): ReadinessAnswer {
    const details = { parent: this.options.parent.url, cursor: this.options.log.cursor };
    if (this.failingSince !== null && now - this.failingSince >= CUT_OFF_AFTER_MS)
      return {
        ready: false,
        reason: `cut off from its parent for ${Math.round((now - this.failingSince) / 1000)} s: ${this.lastError}`,
        details,
      };
    if (this.lastSyncAt === null) return { ready: false, reason: 'not synced with its parent yet', details };
    if (!this.caughtUp) return { ready: false, reason: 'catching up with its parent', details };
    return { ready: true, details };
  }

  status(): FollowerStatus {
    let nodes = 0;
    for (const entry of this.options.log.latestEntries())
      if (entryFor(entry, this.options.relayId) === 'keep') nodes++;
    return {
      cursor: this.options.log.cursor,
      nodes,
      blobs: this.options.blobs.count,
      blobFetches: this.fetches,
      lastSyncAt: this.lastSyncAt,
      lastError: this.lastError,
      parent: this.parentHead,
      entriesBehind: this.parentHead ? Math.max(0, this.parentHead.seq - this.options.log.cursor) : null,
      revisionsBehind: this.parentHead
        ? Math.max(0, this.parentHead.revision - this.options.log.latestRevision)
        : null,
    };
  }

  start(): void {
    this.running ??= this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    await this.running;
    // Those of the last page, which no page request will carry now.
    if (this.riding.length > 0) await this.confirm(this.riding.splice(0));
    await this.flushing;
  }

  /** Confirmations of the relays below, passed up with this relay's own. */
  async confirm(confirmations: readonly Confirmation[]): Promise<void> {
    this.outbox.push(...confirmations);
    this.flushSoon();
  }

  private get pageSize(): number {
    return this.options.pageSize ?? 5_000;
  }

  private async page(after: number, waitMs: number): Promise<FeedPage> {
    const confirmations = this.riding.splice(0, MAX_RIDING);
    let page: ReadFeedPage;
    try {
      page = await this.options.parent.feed(
        after,
        waitMs,
        this.pageSize,
        this.abort.signal,
        this.options.inlineBytes ?? INLINE_BYTES,
        confirmations,
      );
    } catch (error) {
      // Refused with them, the request would be refused again: they go, the page is asked for
      // without them. Failed otherwise (the parent cannot pass them on: its bus is away), they are
      // sent on their own, retried apart: the pages never wait for them.
      if (error instanceof RefusedByParentError) this.dropRefused(error, confirmations.length);
      else if (confirmations.length > 0) await this.confirm(confirmations);
      throw error;
    }
    if (page.refused.length > 0)
      this.options.logger.warn(
        { refused: page.refused.slice(0, 10), count: page.refused.length, after },
        'feed entries refused: they do not read as entries; the others are applied, these nodes keep their bundle',
      );
    return page;
  }

  private async run(): Promise<void> {
    let backoffMs = 250;
    let ahead: { readonly after: number; readonly page: Promise<FeedPage> } | null = null;
    let restored = !this.options.blobs.droppedAtOpening;
    while (!this.stopped) {
      try {
        if (!restored) {
          await this.restoreDroppedBlobs();
          restored = true;
        }
        const cursor = this.options.log.cursor;
        const page: FeedPage = await (ahead?.after === cursor
          ? ahead.page
          : this.page(cursor, this.options.pollWaitMs ?? 25_000));
        ahead = null;
        if (page.entries.length >= this.pageSize) {
          const next = this.page(page.next, 0);
          next.catch(() => undefined);
          ahead = { after: page.next, page: next };
        }
        // The credentials first: a relay below may ask for this page's entries as soon as they are on disk.
        if (page.relays) await this.options.onSubtreeRelays?.(page.relays);
        await this.apply(page);
        // The next page is asked for already (a catch-up's full pages): they go on their own.
        if (ahead && this.riding.length > 0) await this.confirm(this.riding.splice(0));
        if (page.head) this.parentHead = page.head;
        this.caughtUp = page.entries.length < this.pageSize;
        this.lastSyncAt = new Date().toISOString();
        this.lastError = null;
        this.failingSince = null;
        backoffMs = 250;
      } catch (error) {
        ahead = null;
        if (this.stopped) break;
        this.lastError = (error as Error).message;
        this.failingSince ??= Date.now();
        this.options.logger.warn(
          { err: error, parent: this.options.parent.url },
          'feed sync failed; retrying',
        );
        await new Promise((resolve) => setTimeout(resolve, backoffMs));
        backoffMs = Math.min(backoffMs * 2, 5_000);
      }
    }
  }

  /**
   * The blobs of the bundles served here that opening dropped as torn (a crash or power loss
   * mid-write), fetched again before anything else: until then their nodes' downloads fail.
   */
  private async restoreDroppedBlobs(): Promise<void> {
    const { relayId, blobs, log, logger } = this.options;
    const missing = new Set<string>();
    for (const entry of log.latestEntries())
      if (entryFor(entry, relayId) === 'keep')
        for (const file of entry.bundle ? blobFiles(entry.bundle) : [])
          if (!blobs.has(file.sha256)) missing.add(file.sha256);
    if (missing.size === 0) return;
    logger.warn(
      { blobs: missing.size },
      'blobs of served bundles dropped as torn at opening: fetching them again',
    );
    const absent = await this.fetchBlobs([...missing]);
    await blobs.flush();
    for (const digest of absent) this.unheld.add(digest);
    if (absent.size > 0)
      logger.error(
        { blobs: absent.size, examples: [...absent].slice(0, 5) },
        'blobs dropped as torn that the parent no longer holds: their nodes wait for their next bundle',
      );
  }

  /**
   * One page: its missing blobs, then the entries appended at once, then its confirmations sent. A
   * node whose files the parent no longer holds (an entry superseded long ago, whose blobs were
   * collected) is left out of the page: it keeps the bundle it has until a later entry brings one.
   */
  private async apply(page: FeedPage): Promise<void> {
    const { relayId, blobs, log } = this.options;
    const latest = new Map<string, FeedEntry>();
    for (const entry of page.entries) latest.set(entry.nodeId, entry);
    await this.storeGiven(page.blobs);
    const missing = new Set<string>();
    for (const entry of latest.values())
      if (entryFor(entry, relayId) === 'keep') this.missingBlobs(entry, missing);
    const absent = await this.fetchBlobs([...missing]);
    let entries = page.entries;
    if (absent.size > 0) {
      const incomplete = new Set<string>();
      for (const entry of latest.values())
        if (
          entryFor(entry, relayId) === 'keep' &&
          entry.bundle &&
          blobFiles(entry.bundle).some((file) => absent.has(file.sha256))
        )
          incomplete.add(entry.nodeId);
      entries = page.entries.filter((entry) => !incomplete.has(entry.nodeId));
      for (const nodeId of incomplete) latest.delete(nodeId);
      this.entriesLeftOut.inc(page.entries.length - entries.length);
      this.options.logger.warn(
        { nodes: [...incomplete].slice(0, 10), count: incomplete.size, missingBlobs: absent.size },
        'feed entries left out: the parent no longer holds their files; these nodes keep their bundle',
      );
    }
    // The blobs reach the disk before the entries that name them (the log flushes each append).
    await blobs.flush();
    await log.append(entries, page.next);

    // They go with the next page request (the parent takes them first): no request of their own.
    this.riding.push(...confirmationsOf(latest.values(), relayId, new Date().toISOString()));
  }

  /** Adds the blobs of a kept entry that are not held (`addMissingBlobs`: the node's kept latest entry's are). */
  private missingBlobs(entry: FeedEntry, missing: Set<string>): void {
    const { relayId, blobs, log } = this.options;
    if (!entry.bundle) return;
    const previous = log.latest(entry.nodeId);
    const before =
      previous?.bundle && entryFor(previous, relayId) === 'keep' ? blobFiles(previous.bundle) : [];
    addMissingBlobs(blobFiles(entry.bundle), before, this.unheld, (digest) => blobs.has(digest), missing);
  }

  /**
   * The blobs the parent gave with the page (`inlineBytes`), those not held yet: each is checked
   * against its digest as it is stored, like a fetched one.
   */
  private async storeGiven(given: FeedPage['blobs']): Promise<void> {
    if (!given) return;
    const { blobs } = this.options;
    const fresh: Blob[] = [];
    for (const [sha256, base64] of Object.entries(given))
      if (!blobs.has(sha256)) fresh.push({ sha256, content: Buffer.from(base64, 'base64') });
    if (fresh.length === 0) return;
    let stored = fresh;
    try {
      await blobs.writeMany(fresh);
    } catch {
      // One that does not have its digest must not hold up the page: it is asked for like any other.
      stored = fresh.filter(
        (blob) => createHash('sha256').update(blob.content).digest('hex') === blob.sha256,
      );
      this.options.logger.warn(
        { refused: fresh.length - stored.length },
        'blobs given with a feed page that do not have their digest: asked for again',
      );
      await blobs.writeMany(stored);
    }
    this.fetches += stored.length;
    this.blobFetches.inc(stored.length);
  }

  /**
   * The blobs in batches, a few requests at a time; each blob is checked against its digest as it is
   * stored. Resolves with the digests the parent does not hold: a batch it answers so is asked
   * again without them.
   */
  private async fetchBlobs(digests: readonly string[]): Promise<Set<string>> {
    const size = this.options.blobBatch ?? 500;
    const batches: string[][] = [];
    for (let start = 0; start < digests.length; start += size)
      batches.push(digests.slice(start, start + size));
    const absent = new Set<string>();
    let next = 0;
    let failed = false;
    const fetchBatch = async (batch: readonly string[]): Promise<void> => {
      if (batch.length === 0) return;
      try {
        const received = await this.options.parent.blobs(batch, this.abort.signal);
        await this.options.blobs.writeMany(received);
        this.fetches += received.length;
        this.blobFetches.inc(received.length);
      } catch (error) {
        if (!(error instanceof MissingBlobsError)) throw error;
        const asked = new Set(batch);
        const named = new Set(error.missing.filter((digest) => asked.has(digest)));
        // A 404 naming none of ours would be answered again: that is a failure, not a gap.
        if (named.size === 0) throw error;
        for (const digest of named) absent.add(digest);
        await fetchBatch(batch.filter((digest) => !named.has(digest)));
      }
    };
    const worker = async (): Promise<void> => {
      while (next < batches.length && !this.stopped && !failed) {
        const batch = batches[next++] ?? [];
        try {
          await fetchBatch(batch);
        } catch (error) {
          failed = true;
          throw error;
        }
      }
    };
    // Every request settled before the page is given up: a retry must not fetch again what one still brings.
    const results = await Promise.allSettled(
      Array.from({ length: Math.min(this.options.fetchConcurrency ?? 4, batches.length) }, worker),
    );
    for (const result of results) if (result.status === 'rejected') throw result.reason;
    if (this.stopped) throw new Error('stopped');
    return absent;
  }

  private dropRefused(error: RefusedByParentError, count: number): void {
    this.confirmationsDropped.inc({ status: String(error.status) }, count);
    this.options.logger.warn(
      { err: error, confirmations: count },
      'confirmations refused by the parent: dropped, not sent again',
    );
  }

  private flushSoon(): void {
    this.flushing ??= (async () => {
      while (this.outbox.length > 0) {
        const batch = this.outbox.splice(0, 5_000);
        try {
          await this.options.parent.confirm(batch);
        } catch (error) {
          if (error instanceof RefusedByParentError) {
            // Sent again, it would be refused again, forever: this batch is let go, the next ones go on.
            this.dropRefused(error, batch.length);
            continue;
          }
          this.outbox.unshift(...batch);
          // Confirmations are about lag, not correctness: past this many, the oldest are let go.
          if (this.outbox.length > MAX_WAITING) this.outbox.splice(0, this.outbox.length - MAX_WAITING);
          this.options.logger.warn({ err: error }, 'confirmations not accepted by the parent; retrying');
          if (this.stopped) break;
          await new Promise((resolve) => setTimeout(resolve, 1_000));
        }
      }
      this.flushing = null;
    })();
  }
}
