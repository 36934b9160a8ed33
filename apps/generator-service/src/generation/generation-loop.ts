import { performance } from 'node:perf_hooks';
import type { BundleCache } from '@policygen/cache';
import type { NodeOwnership } from '@policygen/engine';
import { GenerationEngine } from '@policygen/engine';
import type { ConfigChangeEvent } from '@policygen/events';
import { PublishRejectedError } from '@policygen/messaging';
import type { Logger } from 'pino';
import type { BundlePublisher, RevisionStamp } from './bundle-publisher';
import type { NodeOutcome } from './node-outcome';
import type { SnapshotSource } from '@policygen/store';

/** What the consumers hand the loop; only the loop touches the engine. */
export type WorkItem =
  | { readonly kind: 'change'; readonly event: ConfigChangeEvent }
  | {
      readonly kind: 'ownership';
      readonly owns: NodeOwnership;
      /** Names the share: two items with the same description own the same nodes. */
      readonly description: string;
      /** Every node: the engine holds the whole fleet. */
      readonly everyNode?: boolean;
    }
  | { readonly kind: 'request'; readonly nodeId: string; readonly revision: number };

export interface GenerationLoopOptions {
  readonly snapshots: SnapshotSource;
  readonly cache: BundleCache;
  readonly publisher: BundlePublisher;
  readonly logger: Logger;
  /**
   * Nodes computed between two rounds of publishing in a catch-up (default 64, as a change's). A
   * slice's bundles live until its publishing is answered, the next slice computed meanwhile: those
   * of 500 nodes lived through young-generation collections, so they were copied, promoted and
   * collected again from the old generation (10,000 nodes imported, `--trace-gc-nvp`: 342 MB
   * promoted in slices of 500, 288 MB in slices of 64, the contents kept as bytes in both); a
   * slice's fixed costs are a few round trips, overlapped with the next slice's computation.
   */
  readonly sliceSize?: number;
  /**
   * The same for a change's own nodes (default 64): its first bundles go out while the rest are
   * computed, so the stages downstream work alongside instead of one after the other.
   */
  readonly changeSliceSize?: number;
  /** Waits after a failed cycle (snapshot, cache or bus), doubled at each failure in a row (default 1 s). */
  readonly retryDelayMs?: number;
  /** The longest wait between two attempts (default 30 s). */
  readonly maxRetryDelayMs?: number;
  /** Told of every failed cycle and of the first success after them. */
  readonly onFailure?: (retriable: boolean, consecutive: number) => void;
  readonly onRecovery?: () => void;
  /** How long a snapshot older than the change log is asked for again (default 30 s). */
  readonly snapshotPatienceMs?: number;
  /** Nodes that left the fleet, or this instance's share (a rebalance gives the new share). */
  readonly onNodesGone?: (nodeIds: readonly string[]) => void;
  readonly onOwnership?: (owns: NodeOwnership) => void;
}

export interface GenerationStatus {
  readonly ready: boolean;
  /**
   * The regeneration that follows loading a snapshot (at start, after an import too large for the
   * log, or a gap), a rebalance or a flushed cache is done: every owned node is at the revision.
   */
  readonly caughtUp: boolean;
  readonly revision: number | null;
  readonly ownership: string;
  /** Nodes of its share in the configuration the engine holds (the others are left out of it). */
  readonly held: number;
  readonly pending: number;
  readonly queued: number;
  readonly cycles: number;
  readonly lastCycle: CycleReport | null;
  /** Set while cycles fail: since when, how many in a row, the last error, and whether retrying can help. */
  readonly failing: FailingStatus | null;
}

export interface FailingStatus {
  readonly since: string;
  readonly consecutiveFailures: number;
  readonly error: string;
  readonly retriable: boolean;
}

export interface CycleReport {
  readonly revision: number;
  readonly changeSets: number;
  readonly candidates: number;
  readonly generated: number;
  readonly unchanged: number;
  readonly failed: number;
  readonly removed: number;
  readonly blobsStored: number;
  readonly durationMs: number;
}

const NOBODY: NodeOwnership = () => false;
/** The ownership a loop reports before the consumer group gives it a share. */
export const NO_SHARE_YET = 'none yet';
/** A change set naming this many nodes (an import, a bulk edit) regenerates as a catch-up. */
const BULK_CHANGE_NODES = 1_000;

function nodesNamed(changeSet: {
  readonly upsert?: Record<string, unknown> | undefined;
  readonly delete?: Record<string, unknown> | undefined;
}): number {
  const count = (section: Record<string, unknown> | undefined): number => {
    const nodes = section?.['nodes'];
    return Array.isArray(nodes) ? nodes.length : 0;
  };
  return count(changeSet.upsert) + count(changeSet.delete);
}
/** The longest the loop computes without handing the event loop back. */
const YIELD_EVERY_MS = 20;

/**
 * The generator's single writer: it builds the engine from a snapshot, applies the change log in
 * revision order (a gap means a new snapshot), and regenerates the pending nodes it owns in cycles.
 * Work arriving during a cycle waits for the next one, so a burst of change sets costs one
 * computation per node at the newest revision. The consumers only enqueue: they never wait on a
 * cycle, so they keep their group membership however long a cycle takes.
 */
export class GenerationLoop {
  private engine: GenerationEngine | undefined;
  private owns: NodeOwnership = NOBODY;
  private ownsEveryNode = false;
  private ownership = NO_SHARE_YET;
  /** Set once this instance has been given its share: the engine is built for it alone. */
  private ownershipKnown = false;
  /** The share the engine holds (its description), as loaded. */
  private heldShare: string | undefined;
  private queue: WorkItem[] = [];
  private readonly waitingRequests: { nodeId: string; revision: number }[] = [];
  private readonly commitTimes = new Map<number, string>();
  private reconcile = true;
  /** Set by whatever makes every owned node due again; cleared by the first cycle that completes after it. */
  private catchingUp = true;
  private stopped = false;
  private wake: (() => void) | undefined;
  private running: Promise<void> | undefined;
  private cycles = 0;
  private lastCycle: CycleReport | null = null;
  private failing: FailingStatus | null = null;
  private readonly sliceSize: number;
  private readonly changeSliceSize: number;
  private readonly retryDelayMs: number;
  private readonly snapshotPatienceMs: number;

  constructor(private readonly options: GenerationLoopOptions) {
    this.sliceSize = options.sliceSize ?? 64;
    this.changeSliceSize = options.changeSliceSize ?? 64;
    this.retryDelayMs = options.retryDelayMs ?? 1_000;
    this.snapshotPatienceMs = options.snapshotPatienceMs ?? 30_000;
  }

  enqueue(item: WorkItem): void {
    this.queue.push(item);
    this.wake?.();
  }

  start(): void {
    this.running ??= this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.running;
  }

  /** The engine's cache sizes, none before it is built: what its state holds beyond the fleet. */
  engineCaches(): ReturnType<GenerationEngine['cacheStats']> | null {
    return this.engine?.cacheStats() ?? null;
  }

  status(): GenerationStatus {
    return {
      ready: this.engine !== undefined,
      caughtUp: this.engine !== undefined && !this.catchingUp,
      revision: this.engine?.revision ?? null,
      ownership: this.ownership,
      held: this.engine?.compiled.nodeIds.length ?? 0,
      pending: this.engine?.pendingNodes().length ?? 0,
      queued: this.queue.length,
      cycles: this.cycles,
      lastCycle: this.lastCycle,
      failing: this.failing,
    };
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      try {
        if (!this.engine) {
          // The engine holds this instance's share only: nothing to load before it is known.
          if (!this.adoptQueuedOwnership()) {
            await this.idleUntilOwnership();
            continue;
          }
          await this.loadSnapshot();
        }
        await this.cycle();
      } catch (error) {
        await this.sleep(this.failed(error));
        continue;
      }
      if (this.failing) {
        this.options.logger.info(
          { failures: this.failing.consecutiveFailures, since: this.failing.since },
          'generation recovered',
        );
        this.failing = null;
        this.options.onRecovery?.();
      }
      if (this.queue.length === 0 && !this.hasWork()) await this.idle();
    }
  }

  /**
   * Records a failed cycle and says how long to wait. A refusal that retrying cannot change (the
   * bus refusing the topic or its settings) is logged as such and retried rarely: the loop stays
   * alive for when an operator mends it, and readiness says it is stuck meanwhile.
   */
  private failed(error: unknown): number {
    const retriable = !(error instanceof PublishRejectedError);
    const consecutiveFailures = (this.failing?.consecutiveFailures ?? 0) + 1;
    this.failing = {
      since: this.failing?.since ?? new Date().toISOString(),
      consecutiveFailures,
      error: (error as Error).message,
      retriable,
    };
    this.options.onFailure?.(retriable, consecutiveFailures);
    const maxDelay = this.options.maxRetryDelayMs ?? 30_000;
    const delay = retriable
      ? Math.min(this.retryDelayMs * 2 ** Math.min(consecutiveFailures - 1, 16), maxDelay)
      : maxDelay;
    this.options.logger.error(
      { err: error, retriable, consecutiveFailures, retryInMs: delay },
      retriable
        ? 'generation cycle failed; retrying'
        : 'generation cycle refused for good by the bus: nothing is published until this is mended',
    );
    return delay;
  }

  private hasWork(): boolean {
    return (this.engine?.pendingNodes().length ?? 0) > 0 || this.reconcile;
  }

  /** Takes the latest share queued before the engine exists; says whether the share is known. */
  private adoptQueuedOwnership(): boolean {
    const shares = this.queue.filter((item) => item.kind === 'ownership');
    this.queue = this.queue.filter((item) => item.kind !== 'ownership');
    const latest = shares.at(-1);
    if (latest) this.adopt(latest);
    return this.ownershipKnown;
  }

  private adopt(item: Extract<WorkItem, { kind: 'ownership' }>): void {
    this.owns = item.owns;
    this.ownsEveryNode = item.everyNode === true;
    this.ownership = item.description;
    this.ownershipKnown = true;
    this.options.onOwnership?.(item.owns);
  }

  private idleUntilOwnership(): Promise<void> {
    return new Promise((resolve) => {
      this.wake = () => {
        if (!this.stopped && !this.queue.some((item) => item.kind === 'ownership')) return;
        this.wake = undefined;
        resolve();
      };
      this.wake();
    });
  }

  private idle(): Promise<void> {
    return new Promise((resolve) => {
      this.wake = () => {
        this.wake = undefined;
        resolve();
      };
      if (this.stopped || this.queue.length > 0) this.wake();
    });
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
    });
  }

  /**
   * Builds the engine from the config-service's snapshot, one at `atLeast` or newer: a config-service
   * instance that has not caught up with the log yet is asked again.
   */
  private async loadSnapshot(atLeast = 0): Promise<void> {
    const giveUpAt = Date.now() + this.snapshotPatienceMs;
    // Only this instance's nodes are validated and kept.
    const share = this.ownsEveryNode ? {} : { holds: this.owns };
    let snapshot = await this.options.snapshots.latest(share);
    while (snapshot.revision < atLeast && !this.stopped) {
      if (Date.now() >= giveUpAt) {
        // A revision the store never reaches did not come from it: go on from what it has.
        this.options.logger.error(
          { snapshot: snapshot.revision, needed: atLeast },
          'the change log names a revision the config-service does not have; going on from its snapshot',
        );
        break;
      }
      this.options.logger.warn(
        { snapshot: snapshot.revision, needed: atLeast },
        'the snapshot is older than the change log; asking again',
      );
      await this.sleep(this.retryDelayMs);
      snapshot = await this.options.snapshots.latest(share);
    }
    const engine = this.ownsEveryNode
      ? GenerationEngine.fromFleet(snapshot.fleet, { revision: snapshot.revision })
      : GenerationEngine.fromShare(snapshot.fleet, { revision: snapshot.revision, holds: this.owns });
    engine.setOwnership(this.owns);
    this.engine = engine;
    this.heldShare = this.ownership;
    this.commitTimes.clear();
    this.commitTimes.set(snapshot.revision, snapshot.committedAt ?? new Date().toISOString());
    this.reconcile = true;
    this.catchingUp = true;
    this.options.logger.info(
      {
        revision: snapshot.revision,
        nodes: engine.compiled.nodeIds.length,
        share: this.ownership,
      },
      'configuration loaded from a snapshot, with the nodes of this instance',
    );
  }

  /**
   * The engine holds the nodes of the share it was loaded for: when the consumer group gave this
   * instance another share, a snapshot of the new one replaces it. Until that load succeeds nothing
   * is computed (a failed load leaves the mismatch, and the next cycle tries again).
   */
  private async loadMovedShare(): Promise<void> {
    const engine = this.engine;
    if (!engine || this.heldShare === this.ownership) return;
    this.options.logger.info(
      { held: this.heldShare, share: this.ownership },
      'the share of nodes moved: loading a snapshot for the new one',
    );
    await this.loadSnapshot(engine.revision);
  }

  private async cycle(): Promise<void> {
    const started = performance.now();
    const changeSets = await this.drainQueue();
    await this.loadMovedShare();
    const engine = this.engine;
    if (!engine) return;
    // The cache's marker is asked for while the first slice is computed, and answered before
    // anything is published: a round trip a cycle without a wait of its own.
    const claim = this.options.cache.claimFreshness();
    claim.catch(() => undefined);
    // A removal of vanished nodes publishes before any slice: then the answer is awaited first
    // (and a cycle that starts over after a flush, which reconciles, never starts over again).
    const claimedFirst = this.reconcile;
    if (claimedFirst) {
      if (await claim) this.refill(engine);
    } else {
      // The Redis client writes what it is given on the loop's next turn: a turn, and the claim
      // is on its way before the slice's computation holds the loop.
      await new Promise((resolve) => setImmediate(resolve));
    }
    const catchUp = this.catchingUp;
    const stamp: RevisionStamp = {
      revision: engine.revision,
      committedAt: this.commitTimes.get(engine.revision) ?? new Date().toISOString(),
      ...(catchUp ? { catchUp } : {}),
    };
    const forced = new Set<string>();
    for (let index = this.waitingRequests.length - 1; index >= 0; index--) {
      const request = this.waitingRequests[index] as { nodeId: string; revision: number };
      if (request.revision > engine.revision) continue;
      forced.add(request.nodeId);
      this.waitingRequests.splice(index, 1);
    }
    engine.forceRegeneration(forced);

    let removed = 0;
    if (this.reconcile) removed += await this.removeVanishedNodes(engine, stamp);
    const candidates = engine.pendingNodes();
    const totals = { generated: 0, unchanged: 0, failed: 0, removed: 0, blobsStored: 0 };
    // A slice is published while the next one is computed: the bus and the cache answer meanwhile.
    let publishing: Promise<void> | null = null;
    const publish = async (outcomes: readonly NodeOutcome[]): Promise<void> => {
      try {
        const summary = await this.options.publisher.publish(outcomes, stamp, (nodeId, generatedAt) =>
          engine.bundle(nodeId, { generatedAt }),
        );
        for (const key of Object.keys(totals) as (keyof typeof totals)[]) totals[key] += summary[key];
      } catch (error) {
        this.unpublished(engine, outcomes, forced);
        throw error;
      }
    };
    const sliceSize = catchUp ? this.sliceSize : this.changeSliceSize;
    for (let start = 0; start < candidates.length; start += sliceSize) {
      const outcomes = await this.compute(engine, candidates.slice(start, start + sliceSize), forced);
      try {
        await publishing;
        if (start === 0 && !claimedFirst && (await claim)) {
          // Computed against what the cache held before it was flushed: the cycle starts over.
          this.unpublished(engine, outcomes, forced);
          this.refill(engine);
          return await this.cycle();
        }
      } catch (error) {
        this.unpublished(engine, outcomes, forced);
        throw error;
      }
      publishing = publish(outcomes);
      // Failures are awaited above or below; this only keeps them from counting as unhandled meanwhile.
      publishing.catch(() => undefined);
    }
    await publishing;
    if (candidates.length === 0 && !claimedFirst && (await claim)) {
      this.unpublished(engine, [], forced);
      this.refill(engine);
      return await this.cycle();
    }
    const deleted = engine.takeRemoved();
    // Should the removal fail, the next cycle finds these nodes in the cache and not in the fleet.
    this.reconcile = deleted.length > 0;
    removed += await this.options.publisher.remove(deleted, stamp);
    this.options.onNodesGone?.(deleted);
    this.reconcile = false;
    // A rebalance or a snapshot queued meanwhile sets it again when the next cycle takes it.
    if (catchUp && this.engine === engine) this.catchingUp = false;
    this.prune(engine.revision);

    this.cycles++;
    this.lastCycle = {
      revision: engine.revision,
      changeSets,
      candidates: candidates.length,
      ...totals,
      removed: totals.removed + removed,
      durationMs: Math.round(performance.now() - started),
    };
    if (candidates.length > 0 || removed > 0 || changeSets > 0)
      this.options.logger.info(this.lastCycle, 'generation cycle');
  }

  /** A new or flushed cache: every owned node is published again. */
  private refill(engine: GenerationEngine): void {
    this.options.logger.info(
      { revision: engine.revision },
      'the bundle cache is new or was flushed: every node of this instance is published again',
    );
    this.options.publisher.forgetStoredBlobs();
    engine.setOwnership(NOBODY);
    engine.setOwnership(this.owns);
    this.reconcile = true;
    this.catchingUp = true;
  }

  /**
   * Regenerates nodes, handing the event loop back every few milliseconds so that the slice being
   * published, heartbeats and health checks go on meanwhile.
   */
  private async compute(
    engine: GenerationEngine,
    nodeIds: readonly string[],
    forced: ReadonlySet<string>,
  ): Promise<NodeOutcome[]> {
    const outcomes: NodeOutcome[] = [];
    let yieldedAt = performance.now();
    for (const nodeId of nodeIds) {
      const began = performance.now();
      const generatedAt = Date.now();
      // An asked-for node's files all go to the cache again: a consumer found some missing there.
      const regeneration = forced.has(nodeId)
        ? engine.regenerateNode(nodeId, { materialise: true, generatedAt })
        : engine.regenerateNode(nodeId, {
            materialise: true,
            generatedAt,
            stored: this.options.publisher.stored,
          });
      const finished = performance.now();
      const bundle =
        !regeneration.skipped && regeneration.bundle?.hash
          ? this.options.publisher.published(regeneration.bundle, generatedAt, forced.has(nodeId))
          : undefined;
      outcomes.push({
        nodeId,
        skipped: regeneration.skipped,
        result: regeneration.result,
        ...(bundle ? { bundle } : {}),
        durationMs: finished - began,
        generatedAt,
        forced: forced.has(nodeId),
      });
      if (finished - yieldedAt >= YIELD_EVERY_MS) {
        await new Promise((resolve) => setImmediate(resolve));
        yieldedAt = performance.now();
      }
    }
    return outcomes;
  }

  /** The engine holds these results already: without this they would never be published. */
  private unpublished(
    engine: GenerationEngine,
    outcomes: readonly NodeOutcome[],
    forced: ReadonlySet<string>,
  ): void {
    engine.forceRegeneration(outcomes.map((outcome) => outcome.nodeId));
    // Asked-for nodes of the slices not computed yet lose their mark with this cycle: ask again.
    for (const nodeId of forced) this.waitingRequests.push({ nodeId, revision: 0 });
  }

  /** Applies everything queued, in order; returns how many change sets moved the revision. */
  private async drainQueue(): Promise<number> {
    let applied = 0;
    while (this.queue.length > 0) {
      const items = this.queue;
      this.queue = [];
      for (const item of items) {
        const engine = this.engine;
        if (!engine) return applied;
        if (item.kind === 'ownership') {
          this.adopt(item);
          // Another share is loaded anew by the cycle, before it computes anything (`loadMovedShare`).
          if (item.description === this.heldShare) {
            engine.setOwnership(item.owns);
            this.reconcile = true;
            this.catchingUp = true;
          }
        } else if (item.kind === 'request') {
          this.waitingRequests.push({ nodeId: item.nodeId, revision: item.revision });
        } else if (item.event.revision > engine.revision) {
          const { event } = item;
          if (!('changeSet' in event)) {
            this.options.logger.info(
              { revision: event.revision, bytes: event.changeSetOmitted.bytes },
              'a change set too large for the log: loading a new snapshot',
            );
            await this.loadSnapshot(event.revision);
          } else if (event.revision > engine.revision + 1 || !this.applyChange(engine, event)) {
            this.options.logger.warn(
              { at: engine.revision, received: event.revision },
              'gap or divergence in the change log: loading a new snapshot',
            );
            await this.loadSnapshot(event.revision);
          } else {
            applied++;
            // An import or a bulk change: its regeneration is a catch-up, not a change's own lag.
            if (nodesNamed(event.changeSet) >= BULK_CHANGE_NODES) this.catchingUp = true;
          }
        }
      }
    }
    return applied;
  }

  private applyChange(
    engine: GenerationEngine,
    event: Extract<ConfigChangeEvent, { changeSet: unknown }>,
  ): boolean {
    const outcome = engine.apply(event.changeSet);
    if (!outcome.ok) {
      this.options.logger.error(
        { revision: event.revision, issues: outcome.issues.slice(0, 10) },
        'a committed change set does not apply to this configuration',
      );
      return false;
    }
    this.commitTimes.set(event.revision, event.committedAt);
    return true;
  }

  /** Owned nodes the cache still serves but the configuration no longer has (e.g. deleted while down). */
  private async removeVanishedNodes(engine: GenerationEngine, stamp: RevisionStamp): Promise<number> {
    const held = await this.options.cache.nodeHashes();
    const vanished = [...held.keys()].filter(
      (nodeId) => this.owns(nodeId) && !engine.compiled.nodes.has(nodeId),
    );
    const removed = await this.options.publisher.remove(vanished.sort(), stamp);
    this.options.onNodesGone?.(vanished);
    return removed;
  }

  private prune(revision: number): void {
    for (const held of this.commitTimes.keys()) if (held < revision) this.commitTimes.delete(held);
  }
}
