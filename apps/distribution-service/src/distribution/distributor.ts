import type { Logger } from 'pino';
import type { BundleCache } from '@policygen/cache';
import type {
  ArrivedBundle,
  BlobDirectory,
  FeedEntry,
  FeedLog,
  UnnumberedEntry,
} from '@policygen/distribution';
import {
  addMissingBlobs,
  DistributionLedger,
  RelayTopology,
  blobFiles,
  derivesFiles,
  nodeKey,
} from '@policygen/distribution';
import { compareCodeUnits, MANIFEST_FILE, sha256 } from '@policygen/engine';
import type { ConfigChangeEvent, ListedFile, NodeBundleEvent } from '@policygen/events';
import type { PlacementSnapshot, PlacementSource } from '@policygen/store';

export interface DistributorOptions {
  readonly log: FeedLog;
  readonly blobs: BlobDirectory;
  /** Where the generator put the files' contents. */
  readonly cache: BundleCache;
  /** The relay tree and where each node sits in it: all of the configuration the root reads. */
  readonly snapshots: PlacementSource;
  readonly logger: Logger;
  /** The secret node tokens and relay credentials derive from; without it, nobody can authenticate. */
  readonly tokenSecret: string | null;
  /** How long a snapshot older than the change log is asked for again (default 30 s). */
  readonly snapshotPatienceMs?: number;
  /**
   * Told of bundles left out because the cache no longer holds some of their files (a newer
   * bundle replaced them long ago, or the cache was flushed): their nodes should be generated again.
   */
  readonly onMissingBlobs?: (bundles: readonly { nodeId: string; revision: number }[]) => Promise<void>;
  /**
   * Told of each append once its entries are on disk (the nodes the root serves can be given them
   * from now on), and what became each node's current bundle: the bundle (its files are in the blob
   * directory) or `null` when the node was removed. The group's offsets are committed only after
   * it resolves.
   */
  readonly onWritten?: (written: WrittenEntries) => Promise<void>;
  /**
   * Whether `onWritten` is given each node's new current bundle (`WrittenEntries.distributed`), for
   * the deprecated latest-bundles topic; else that list stays empty.
   */
  readonly recordsDistributed?: boolean;
  /** Told of each write of bundles, with the number of batches it writes together. */
  readonly onGroupCommit?: (batches: number) => void;
}

/** Entries just written to the root feed, and the nodes whose current bundle they changed. */
export interface WrittenEntries {
  /** One per node at most: each append is of nodes' latest states (`DistributionLedger`). */
  readonly entries: readonly FeedEntry[];
  readonly distributed: readonly DistributedRecord[];
}

/** A node's bundle as the root now serves it, or `null` once it is removed. */
export interface DistributedRecord {
  readonly nodeId: string;
  readonly bundle: BundleEvent | null;
  /** `bundle` as JSON, when it is the event exactly as received: forwarded, not encoded again. */
  readonly json?: Buffer;
}

/** A node.bundle event and when it was produced (the generator's stamp, else the message's). */
export interface ReceivedBundleEvent {
  readonly event: NodeBundleEvent;
  readonly receivedAt: number;
  /** The message's bytes, validated as `event`. */
  readonly json?: Buffer;
}

export interface DistributorStatus {
  readonly ready: boolean;
  /** Set when the feed was found ahead of the configuration at start: both revisions. */
  readonly rebased?: { readonly feedRevision: number; readonly configRevision: number };
  readonly revision: number;
  readonly cursor: number;
  readonly nodes: number;
  /** Nodes with a bundle: those relay root (this service) serves. */
  readonly served: number;
  readonly blobs: number;
}

/**
 * The root of distribution, and its single writer: bundles from the generator and the relay tree
 * from the change log become entries of the root feed, once their files are in the blob directory.
 */
export class Distributor {
  private readonly ledger: DistributionLedger;
  private topology: RelayTopology | null = null;
  private revision = 0;
  private rebased: DistributorStatus['rebased'];
  private work: Promise<unknown> = Promise.resolve();
  /**
   * Blobs a latest entry names that opening dropped as torn and the cache could not give again:
   * the one exception to "a latest entry's blobs are held", which `storeBlobs` relies on.
   */
  private readonly unheld = new Set<string>();
  private waitingBundles: {
    readonly received: readonly ReceivedBundleEvent[];
    readonly resolve: () => void;
    readonly reject: (error: unknown) => void;
  }[] = [];

  constructor(private readonly options: DistributorOptions) {
    const secret = options.tokenSecret;
    this.ledger = new DistributionLedger(options.log, (nodeId) =>
      secret === null ? null : nodeKey(secret, nodeId),
    );
  }

  /** The relay tree as the configuration has it now; null until it is loaded. */
  get relayTopology(): RelayTopology | null {
    return this.topology;
  }

  /**
   * The files of the bundle the root serves for a node (sorted by path), each digest checked when
   * it came: what a new event of the node need not have checked again (`ParseHints`).
   */
  heldFiles(nodeId: string): readonly ListedFile[] | undefined {
    return this.options.log.latest(nodeId)?.bundle?.files;
  }

  status(): DistributorStatus {
    return {
      ready: this.topology !== null,
      revision: this.revision,
      cursor: this.options.log.cursor,
      nodes: this.options.log.nodeCount,
      served: this.servedNodes(),
      blobs: this.options.blobs.count,
      ...(this.rebased ? { rebased: this.rebased } : {}),
    };
  }

  private servedNodes(): number {
    let served = 0;
    for (const entry of this.options.log.latestEntries()) if (entry.bundle) served++;
    return served;
  }

  /**
   * Loads the relay tree, and moves the nodes that moved while the service was away; then gives the
   * relays the node keys of the secret it has now, when it is another than the feed's (rotated).
   */
  start(): Promise<void> {
    return this.serially(async () => {
      if (this.options.blobs.droppedAtOpening) await this.restoreDroppedBlobs();
      await this.reconcile(await this.loadSnapshot(0));
      const rekeyed = this.ledger.rekeyed();
      if (rekeyed.length === 0) return;
      await this.append(this.ledger.number(rekeyed));
      this.options.logger.info(
        { nodes: rekeyed.length },
        'node keys written again: the token secret is not the one the feed was written with',
      );
    });
  }

  /**
   * The blobs of held bundles that opening dropped as torn (a crash or power loss mid-write), from
   * the generator's cache again; the nodes whose files it no longer has are asked for again.
   */
  private async restoreDroppedBlobs(): Promise<void> {
    const digests = new Set<string>();
    for (const entry of this.options.log.latestEntries())
      for (const file of entry.bundle ? blobFiles(entry.bundle) : [])
        if (!this.options.blobs.has(file.sha256)) digests.add(file.sha256);
    if (digests.size === 0) return;
    const absent = await this.copyFromCache([...digests]);
    this.options.blobs.sync();
    for (const digest of absent) this.unheld.add(digest);
    const lost = [...this.options.log.latestEntries()]
      .filter((entry) => entry.bundle && blobFiles(entry.bundle).some((file) => absent.has(file.sha256)))
      .map((entry) => ({ nodeId: entry.nodeId, revision: entry.revision }));
    this.options.logger.warn(
      { blobs: digests.size, fromCache: digests.size - absent.size, nodesRegenerated: lost.length },
      'blobs of held bundles dropped as torn at opening: restored from the cache, the rest regenerated',
    );
    if (lost.length > 0) await this.options.onMissingBlobs?.(lost);
  }

  /**
   * Bundles become feed entries. Batches that arrive together (the partitions of one fetch) or
   * while a write runs are written together next (group commit): one blob fetch, one append, one
   * flush and one send for all of them. Each call resolves once its bundles are on disk.
   */
  bundles(received: readonly ReceivedBundleEvent[]): Promise<void> {
    return new Promise((resolve, reject) => {
      this.waitingBundles.push({ received, resolve, reject });
      if (this.waitingBundles.length === 1) void this.serially(() => this.writeWaitingBundles());
    });
  }

  private async writeWaitingBundles(): Promise<void> {
    const waiting = this.waitingBundles;
    this.waitingBundles = [];
    this.options.onGroupCommit?.(waiting.length);
    try {
      await this.writeBundles(waiting.flatMap(({ received }) => received));
      for (const { resolve } of waiting) resolve();
    } catch (error) {
      for (const { reject } of waiting) reject(error);
    }
  }

  private async writeBundles(received: readonly ReceivedBundleEvent[]): Promise<void> {
    // Events of one node arrive in order (keyed by node id): its last one is its state.
    const latest = new Map<string, ReceivedBundleEvent>();
    for (const item of received) latest.set(item.event.nodeId, item);
    const incomplete = await this.storeBlobs([...latest.values()].map(({ event }) => event));
    // The entries are flushed before the offsets are committed; the blobs they name before them
    // (off the event loop: the feed's long polls and blob requests go on meanwhile).
    await this.options.blobs.flush();
    const entries: UnnumberedEntry[] = [];
    const distributed: DistributedRecord[] = [];
    for (const { event, receivedAt, json } of latest.values()) {
      if (incomplete.has(event.nodeId)) continue;
      const entry =
        event.type === 'node.deleted'
          ? this.ledger.bundleRemoved(event.nodeId, event.revision)
          : this.ledger.bundleArrived(arrived(event, receivedAt));
      if (!entry) continue;
      entries.push(entry);
      if (!this.options.recordsDistributed) continue;
      if (event.type === 'node.deleted') distributed.push({ nodeId: event.nodeId, bundle: null });
      else
        distributed.push({
          nodeId: event.nodeId,
          bundle: distributedBundle(event, receivedAt),
          // An event of today's generators is already in its distributed form.
          ...(json !== undefined && isDistributedForm(event) ? { json } : {}),
        });
    }
    await this.append(this.ledger.number(entries), distributed);
  }

  changes(events: readonly ConfigChangeEvent[]): Promise<void> {
    return this.serially(async () => {
      for (const event of events) {
        if (event.revision <= this.revision) continue;
        if (!this.topology || event.revision !== this.revision + 1 || !('changeSet' in event)) {
          this.options.logger.info(
            { revision: event.revision, held: this.revision },
            'change log not followable from here (gap or omitted change set): loading a snapshot',
          );
          await this.loadSnapshot(event.revision);
          continue;
        }
        const touched = this.topology.apply(event.changeSet);
        this.revision = event.revision;
        await this.append(this.ledger.number(this.ledger.placeOn(this.topology, touched)));
      }
    });
  }

  /**
   * The feed against the configuration it starts from. A feed ahead of it (the configuration's data
   * lost, or restored from an older backup) is rebased on its revision (`DistributionLedger.rebase`):
   * the generator's bundles of the configuration replace what the feed holds. Nodes the feed serves
   * and the configuration does not have are removed: their removal was lost (a crash before it was
   * generated, a flushed cache), or never happened in this configuration.
   */
  private async reconcile(snapshot: PlacementSnapshot): Promise<void> {
    const feedRevision = this.options.log.latestRevision;
    if (feedRevision > snapshot.revision) {
      this.rebased = { feedRevision, configRevision: snapshot.revision };
      this.ledger.rebase(snapshot.revision);
      this.options.logger.error(
        this.rebased,
        'the feed is ahead of the configuration (its data lost, or restored from an older backup): rebuilding the feed from the configuration',
      );
    }
    const present = new Set(snapshot.placement.nodes.map((node) => node.id));
    const removed: UnnumberedEntry[] = [];
    for (const entry of this.options.log.latestEntries()) {
      if (present.has(entry.nodeId)) continue;
      const removal = this.ledger.bundleRemoved(entry.nodeId, snapshot.revision);
      if (removal) removed.push(removal);
    }
    if (removed.length === 0) return;
    await this.append(
      this.ledger.number(removed),
      removed.map(({ nodeId }) => ({ nodeId, bundle: null })),
    );
    this.options.logger.warn(
      { nodes: removed.length, revision: snapshot.revision },
      'nodes the configuration does not have were still served: removed',
    );
  }

  private async loadSnapshot(atLeast: number): Promise<PlacementSnapshot> {
    const giveUpAt = Date.now() + (this.options.snapshotPatienceMs ?? 30_000);
    let snapshot = await this.options.snapshots.latestPlacement();
    while (snapshot.revision < atLeast && Date.now() < giveUpAt) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      snapshot = await this.options.snapshots.latestPlacement();
    }
    const topology = RelayTopology.of(snapshot.placement);
    this.topology = topology;
    this.revision = snapshot.revision;
    const entries = this.ledger.number(this.ledger.placeOn(topology, null));
    await this.append(entries);
    this.options.logger.info(
      { revision: snapshot.revision, nodes: snapshot.placement.nodes.length, moved: entries.length },
      'relay tree loaded from a snapshot',
    );
    return snapshot;
  }

  /**
   * The contents the root does not hold yet, from the generator's cache in batches of one round
   * trip each; a manifest embedded in an event of an older log is rendered here.
   */
  /**
   * Copies the files the blob directory lacks from the cache. A bundle whose files the cache no
   * longer has cannot be served: it is left out (its node keeps the bundle it has) and reported,
   * so one such event never holds up the others. Resolves with the nodes left out.
   */
  private async storeBlobs(events: readonly NodeBundleEvent[]): Promise<Set<string>> {
    const missing = new Set<string>();
    for (const event of events) {
      if (event.type !== 'node.bundle') continue;
      this.missingBlobs(event, missing);
      if (event.manifestSha256 === undefined) {
        const manifest = embeddedManifestContent(event);
        await this.options.blobs.write(sha256(manifest), manifest);
        missing.delete(sha256(manifest));
      }
    }
    const absent = await this.copyFromCache([...missing]);
    if (absent.size === 0) return new Set();
    const incomplete = events.filter(
      (event): event is BundleEvent =>
        event.type === 'node.bundle' && heldFilesOf(event).some((file) => absent.has(file.sha256)),
    );
    if (incomplete.length > 0) {
      this.options.logger.warn(
        {
          nodes: incomplete.slice(0, 10).map((event) => `${event.nodeId}@${event.revision}`),
          count: incomplete.length,
          missingBlobs: absent.size,
        },
        'bundles left out: the cache no longer holds some of their files; asking for them again',
      );
      await this.options.onMissingBlobs?.(
        incomplete.map((event) => ({ nodeId: event.nodeId, revision: event.revision })),
      );
    }
    return new Set(incomplete.map((event) => event.nodeId));
  }

  /** Adds the files of the event that the blob directory lacks (`addMissingBlobs`: the node's latest entry's are held). */
  private missingBlobs(event: BundleEvent, missing: Set<string>): void {
    const previous = this.options.log.latest(event.nodeId)?.bundle;
    const { blobs } = this.options;
    addMissingBlobs(
      heldFilesOf(event),
      previous ? blobFiles(previous) : [],
      this.unheld,
      (digest) => blobs.has(digest),
      missing,
    );
  }

  /** Copies blobs from the cache in batches of one round trip; resolves with those it does not hold. */
  private async copyFromCache(digests: readonly string[]): Promise<Set<string>> {
    const absent = new Set<string>();
    for (let start = 0; start < digests.length; start += CACHE_BATCH) {
      const batch = digests.slice(start, start + CACHE_BATCH);
      const contents = await this.options.cache.getBlobs(batch);
      const found: { sha256: string; content: Buffer }[] = [];
      batch.forEach((digest, index) => {
        const content = contents[index];
        if (content === null || content === undefined) absent.add(digest);
        else found.push({ sha256: digest, content });
      });
      await this.options.blobs.writeMany(found);
    }
    return absent;
  }

  private async append(
    entries: readonly FeedEntry[],
    distributed: readonly DistributedRecord[] = [],
  ): Promise<void> {
    await this.options.log.append(entries);
    if (entries.length > 0 || distributed.length > 0)
      await this.options.onWritten?.({ entries, distributed });
  }

  private serially<T>(task: () => Promise<T>): Promise<T> {
    const run = this.work.then(task);
    this.work = run.catch(() => undefined);
    return run;
  }
}

/** Blobs asked of the generator's cache in one round trip. */
const CACHE_BATCH = 500;

type BundleEvent = Extract<NodeBundleEvent, { type: 'node.bundle' }>;

/** An embedded manifest (events before `manifestSha256`) as the engine writes it now (outputs.md). */
function embeddedManifestContent(event: BundleEvent): string {
  return `${JSON.stringify(event.manifest ?? {})}\n`;
}

function manifestFileOf(event: BundleEvent): { path: string; sha256: string } {
  return {
    path: MANIFEST_FILE,
    sha256: event.manifestSha256 ?? sha256(embeddedManifestContent(event)),
  };
}

/** The files of the event whose contents the root keeps: all but those derived where nodes are served. */
function heldFilesOf(event: BundleEvent): readonly { path: string; sha256: string }[] {
  return derivesFiles(event) ? blobFiles(event) : [...event.files, manifestFileOf(event)];
}

/** The event as distributed: its manifest named by digest, and when it was generated. */
function distributedBundle(event: BundleEvent, receivedAt: number): BundleEvent {
  const { manifest: _embedded, ...rest } = event;
  return {
    ...rest,
    generatedAt: event.generatedAt ?? new Date(receivedAt).toISOString(),
    manifestSha256: manifestFileOf(event).sha256,
  };
}

/** Names its manifest by digest and says when it was generated: `distributedBundle` would give it back unchanged. */
function isDistributedForm(event: BundleEvent): boolean {
  return (
    event.manifest === undefined && event.manifestSha256 !== undefined && event.generatedAt !== undefined
  );
}

function arrived(event: BundleEvent, receivedAt: number): ArrivedBundle {
  const files = [...event.files, manifestFileOf(event)].sort((a, b) => compareCodeUnits(a.path, b.path));
  return {
    nodeId: event.nodeId,
    hash: event.hash,
    revision: event.revision,
    committedAt: event.committedAt,
    generatedAt: event.generatedAt ?? new Date(receivedAt).toISOString(),
    files,
    ...(event.catchUp ? { catchUp: true } : {}),
  };
}
