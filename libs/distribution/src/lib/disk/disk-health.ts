import { existsSync, rmSync, statfsSync } from 'node:fs';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { Counter, Gauge } from 'prom-client';
import type { ReadinessCheck } from '@policygen/service-kit';

/** The files a service keeps: `blobs` (packs and index), `feed` (the feed log), `relays` (a relay's saved subtree). */
export type DiskStore = 'blobs' | 'feed' | 'relays';

/** What was found torn at opening, and how it was repaired. */
export interface TornWrite {
  readonly store: DiskStore;
  /** e.g. `torn-record`, `unindexed-pack-tail`, `digest-mismatch`, `leftover-staging-file`. */
  readonly kind: string;
  readonly detail: Readonly<Record<string, unknown>>;
}

/** Errors that say the disk (or the quota) is full: the write can succeed again once space is back. */
const FULL = new Set(['ENOSPC', 'EDQUOT']);

export function isDiskFull(error: unknown): boolean {
  return FULL.has((error as NodeJS.ErrnoException | null)?.code ?? '');
}

/**
 * How a service's files fare: torn writes repaired at opening, writes that failed (a full disk
 * above all), and the free space of the directories watched. Counted in metrics, logged, and a
 * readiness check that is not ready while the last write of a store failed for want of space.
 * Stores report to it before the service has its registry: `register` replays what came before.
 */
export class DiskHealth {
  private readonly repairs: TornWrite[] = [];
  private readonly failures = new Map<string, number>();
  private readonly fullSince = new Map<DiskStore, { readonly at: number; readonly message: string }>();
  private readonly directories = new Map<DiskStore, string>();
  private repairedCounter: Counter<'store' | 'kind'> | null = null;
  private failedCounter: Counter<'store' | 'code'> | null = null;

  constructor(private readonly logger?: Logger) {}

  /** Every torn write repaired so far. */
  get repaired(): readonly TornWrite[] {
    return this.repairs;
  }

  /** A directory whose free space is reported (`policygen_disk_free_bytes{store}`). */
  watch(store: DiskStore, directory: string): void {
    this.directories.set(store, directory);
  }

  tornWriteRepaired(repair: TornWrite): void {
    this.repairs.push(repair);
    this.repairedCounter?.inc({ store: repair.store, kind: repair.kind });
    this.logger?.warn(
      { store: repair.store, kind: repair.kind, ...repair.detail },
      'a torn write found at opening, repaired',
    );
  }

  /** Removes a staging file a crash left behind (a rewrite that never reached its rename). */
  removeLeftover(store: DiskStore, path: string): void {
    if (!existsSync(path)) return;
    rmSync(path, { recursive: true, force: true });
    this.tornWriteRepaired({ store, kind: 'leftover-staging-file', detail: { path } });
  }

  /** A write of a store failed (and was undone): the caller rethrows it. */
  writeFailed(store: DiskStore, error: unknown): void {
    const code = (error as NodeJS.ErrnoException).code ?? 'unknown';
    const key = `${store}\n${code}`;
    this.failures.set(key, (this.failures.get(key) ?? 0) + 1);
    this.failedCounter?.inc({ store, code });
    const full = isDiskFull(error);
    if (full && !this.fullSince.has(store))
      this.fullSince.set(store, { at: Date.now(), message: (error as Error).message });
    this.logger?.error(
      { err: error, store, code, directory: this.directories.get(store) },
      full
        ? 'the disk is full: a write failed and was undone; it is retried'
        : 'a write failed and was undone',
    );
  }

  /** A write of a store succeeded: space is back if it was missing. */
  writeSucceeded(store: DiskStore): void {
    const full = this.fullSince.get(store);
    if (!full) return;
    this.fullSince.delete(store);
    this.logger?.info(
      { store, fullForMs: Date.now() - full.at },
      'the disk takes writes again: space is back',
    );
  }

  /** Not ready while a store's last write failed for want of space. */
  readonly readiness: ReadinessCheck = {
    name: 'disk',
    check: () => {
      if (this.fullSince.size === 0) return { ready: true, details: { free: this.freeBytes() } };
      const [store, full] = [...this.fullSince][0] as [DiskStore, { at: number; message: string }];
      return {
        ready: false,
        reason: `the disk is full: writes of ${[...this.fullSince.keys()].join(', ')} fail since ${new Date(full.at).toISOString()} (${full.message}); retried until space is back`,
        details: { store, directory: this.directories.get(store), free: this.freeBytes() },
      };
    },
  };

  /** The metrics, with what was counted before. */
  register(registry: Registry): void {
    this.repairedCounter = new Counter({
      name: 'policygen_torn_writes_repaired_total',
      help: 'Torn writes found when the files were opened (a crash or power loss mid-write), by store and kind, and repaired',
      labelNames: ['store', 'kind'],
      registers: [registry],
    });
    for (const repair of this.repairs) this.repairedCounter.inc({ store: repair.store, kind: repair.kind });
    this.failedCounter = new Counter({
      name: 'policygen_disk_write_failures_total',
      help: 'Writes of the service files that failed and were undone (ENOSPC: the disk is full), by store and error code',
      labelNames: ['store', 'code'],
      registers: [registry],
    });
    for (const [key, count] of this.failures) {
      const [store, code] = key.split('\n') as [string, string];
      this.failedCounter.inc({ store, code }, count);
    }
    const full: Gauge<'store'> = new Gauge({
      name: 'policygen_disk_full',
      help: "1 while a store's last write failed for want of space, else 0",
      labelNames: ['store'],
      registers: [registry],
      collect: () => {
        for (const store of this.directories.keys()) full.set({ store }, this.fullSince.has(store) ? 1 : 0);
      },
    });
    const free: Gauge<'store'> = new Gauge({
      name: 'policygen_disk_free_bytes',
      help: "Free bytes (for this user) of the file system holding each store's files",
      labelNames: ['store'],
      registers: [registry],
      collect: () => {
        for (const [store, bytes] of Object.entries(this.freeBytes())) free.set({ store }, bytes);
      },
    });
  }

  private freeBytes(): Record<string, number> {
    const free: Record<string, number> = {};
    for (const [store, directory] of this.directories) {
      try {
        const stats = statfsSync(directory);
        free[store] = stats.bavail * stats.bsize;
      } catch {
        // A directory gone (being recreated) is no answer: left out until it is back.
      }
    }
    return free;
  }
}
