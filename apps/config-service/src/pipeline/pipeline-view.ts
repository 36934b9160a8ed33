import type {
  DistributionEvent,
  DistributionSummary,
  GenerationEvent,
  GenerationSummary,
  NodeFailure,
} from '@policygen/events';
import { NodeFailures } from '@policygen/events';

export type LagStageName = 'generated' | 'distributed' | 'relay' | 'fetched';
const STAGES: readonly LagStageName[] = ['generated', 'distributed', 'relay', 'fetched'];

/** A stage's lag over the window, in milliseconds from the revision's commit (null: no sample). */
export interface StageLag {
  readonly stage: LagStageName;
  readonly count: number;
  readonly p50: number | null;
  readonly p95: number | null;
  readonly p99: number | null;
  readonly max: number | null;
}

export interface LagReport {
  readonly windowSeconds: number;
  /** A change's own bundles. */
  readonly steady: readonly StageLag[];
  /** The regeneration after a generator's restart, an import or a rebalance. */
  readonly catchUp: readonly StageLag[];
}

export interface NodeStatus {
  readonly nodeId: string;
  /** The configuration's revision now. */
  readonly revision: number;
  readonly generation: {
    readonly revision: number;
    readonly outcome: GenerationEvent['outcome'];
    /** The bundle served: the new one, or the last good one after a failure (null: none). */
    readonly hash: string | null;
    readonly at: string;
    readonly lastGoodRevision: number | null;
  } | null;
  readonly failure: Omit<NodeFailure, 'nodeId' | 'lastGoodRevision'> | null;
  /** Each relay that serves the node and the bundle it confirmed; a relay not there yet has none. */
  readonly relays: readonly {
    readonly relayId: string;
    readonly revision: number | null;
    readonly hash: string | null;
    readonly confirmedAt: string | null;
    readonly current: boolean;
  }[];
  /** The newest bundle the node itself fetched from its relay, and when (null: not since the view began). */
  readonly fetched: {
    readonly relayId: string;
    readonly revision: number;
    readonly hash: string;
    readonly fetchedAt: string;
    readonly current: boolean;
  } | null;
}

export interface RevisionProgress {
  readonly revision: number;
  readonly generated: number;
  readonly unchanged: number;
  readonly failed: number;
  /** Bundles of this revision each relay confirmed. */
  readonly relays: readonly { readonly relayId: string; readonly delivered: number }[];
}

export interface RelaySync {
  readonly relayId: string;
  readonly parentId: string | null;
  /** The newest revision of a bundle it confirmed (0: none yet). */
  readonly revision: number;
  /** Nodes it serves whose newest bundle it has not confirmed yet. */
  readonly behind: number;
  readonly confirmedAt: string | null;
  /** Nodes it serves, by the configuration. */
  readonly nodes: number;
}

/** Where each node is served: the relays from `root` down to its policy server. */
export type ServingPath = (nodeId: string) => readonly string[];

interface Sample {
  readonly at: number;
  readonly ms: number;
}

interface NodeState {
  generation: NonNullable<NodeStatus['generation']> | null;
  /** The newest bundle generated (what relays should serve), null when none. */
  wanted: string | null;
  /** Each relay's confirmed bundle, `confirmedAt` in epoch ms. */
  readonly relays: Map<string, { revision: number; hash: string; confirmedAt: number }>;
  /** The bundle whose generated/distributed stages were counted (once per bundle, not per relay). */
  counted: string | null;
  fetched: { relayId: string; revision: number; hash: string; fetchedAt: number } | null;
}

const NO_ERRORS: GenerationEvent['errors'] = [];
const iso = (ms: number): string => new Date(ms).toISOString();

/** One bucket per second of the last minute. */
class RateCounter {
  private readonly buckets = new Map<number, number>();

  add(count: number, now: number): void {
    const second = Math.floor(now / 1000);
    this.buckets.set(second, (this.buckets.get(second) ?? 0) + count);
    for (const held of this.buckets.keys()) if (held < second - 60) this.buckets.delete(held);
  }

  /** The mean rate over the last `seconds` complete seconds. */
  perSecond(now: number, seconds = 10): number {
    const current = Math.floor(now / 1000);
    let total = 0;
    for (let second = current - seconds; second < current; second++) total += this.buckets.get(second) ?? 0;
    return Math.round((total / seconds) * 100) / 100;
  }
}

function percentile(sorted: readonly number[], fraction: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)] ?? null;
}

/**
 * The pipeline as the generation and distribution events tell it — one by one, or a batch at once
 * from their summaries (what the config-service reads), to the same answers — held in memory by the config
 * service: each node's generation, failure and relays; each revision's progress; each relay's sync;
 * the lag of each stage over a window (a catch-up's apart); throughput. Pure: events in, answers out.
 */
export class PipelineView {
  readonly failures = new NodeFailures();
  private readonly nodes = new Map<string, NodeState>();
  private readonly progress = new Map<
    number,
    { generated: number; unchanged: number; failed: number; relays: Map<string, number> }
  >();
  private readonly samples = new Map<string, Sample[]>();
  private readonly relayState = new Map<
    string,
    { revision: number; confirmedAt: number | null; undelivered: Set<string> }
  >();
  private readonly generatedRate = new RateCounter();
  private readonly deliveredRate = new RateCounter();
  private readonly changesRate = new RateCounter();
  private newestGenerated = 0;

  constructor(
    private readonly servingPath: ServingPath,
    private readonly options: {
      readonly windowMs?: number;
      readonly maxSamples?: number;
      readonly revisionsKept?: number;
    } = {},
  ) {}

  changesCommitted(count: number, now = Date.now()): void {
    this.changesRate.add(count, now);
  }

  /** One node's `generation.result`. */
  generation(event: GenerationEvent, now = Date.now()): void {
    const at = new Date(now).toISOString();
    if (this.result(event.nodeId, event.revision, event.outcome, event.hash, event.errors, at))
      this.generatedRate.add(1, now);
  }

  /** A batch's `generation.result`s at once, as its summary tells them: the same as each one by one. */
  generationSummary(summary: GenerationSummary, now = Date.now()): void {
    const at = new Date(now).toISOString();
    const errors =
      summary.failures.length === 0
        ? null
        : new Map(summary.failures.map((failure) => [failure.nodeId, failure.errors]));
    let generated = 0;
    for (const [nodeId, outcome, hash] of summary.results)
      if (
        this.result(
          nodeId,
          summary.revision,
          outcome,
          hash,
          outcome === 'failed' ? (errors?.get(nodeId) ?? NO_ERRORS) : NO_ERRORS,
          at,
        )
      )
        generated++;
    if (generated > 0) this.generatedRate.add(generated, now);
  }

  /** One node's `distribution.confirmed` or `node.fetched`. */
  distribution(event: DistributionEvent, now = Date.now()): void {
    const committed = Date.parse(event.committedAt);
    const catchUp = event.catchUp === true;
    if (event.type === 'node.fetched') {
      const fetchedAt = Date.parse(event.fetchedAt);
      this.fetched(
        event.relayId,
        event.nodeId,
        event.revision,
        event.hash,
        fetchedAt,
        catchUp,
        event.lagMs,
        now,
      );
      return;
    }
    const confirmed = this.confirmed(
      event.relayId,
      event.nodeId,
      event.revision,
      event.hash,
      committed,
      Date.parse(event.generatedAt),
      Date.parse(event.distributedAt),
      Date.parse(event.confirmedAt),
      catchUp,
      now,
    );
    if (confirmed) this.deliveredRate.add(1, now);
  }

  /** A batch's distribution events at once, as its summary tells them: the same as each one by one. */
  distributionSummary(summary: DistributionSummary, now = Date.now()): void {
    let delivered = 0;
    for (const [
      relayId,
      nodeId,
      revision,
      hash,
      committed,
      generated,
      distributed,
      confirmed,
      catchUp,
    ] of summary.confirmed)
      if (
        this.confirmed(
          relayId,
          nodeId,
          revision,
          hash,
          committed,
          generated,
          distributed,
          confirmed,
          catchUp,
          now,
        )
      )
        delivered++;
    if (delivered > 0) this.deliveredRate.add(delivered, now);
    for (const [relayId, nodeId, revision, hash, committed, fetchedAt, catchUp] of summary.fetched)
      this.fetched(
        relayId,
        nodeId,
        revision,
        hash,
        fetchedAt,
        catchUp,
        Math.max(0, fetchedAt - committed),
        now,
      );
  }

  /** A node's generation result; true when it was newer than the one held (and counted). */
  private result(
    nodeId: string,
    revision: number,
    outcome: GenerationEvent['outcome'],
    hash: string | null,
    errors: GenerationEvent['errors'],
    at: string,
  ): boolean {
    const node = this.node(nodeId);
    const previous = node.generation;
    if (previous && revision < previous.revision) return false;
    node.generation = {
      revision,
      outcome,
      hash,
      at,
      lastGoodRevision: outcome === 'failed' ? (previous?.lastGoodRevision ?? null) : revision,
    };
    this.failures.result(nodeId, revision, outcome, hash, errors, at);
    if (revision > this.newestGenerated) this.newestGenerated = revision;
    const progress = this.revision(revision);
    progress[outcome]++;
    if (outcome !== 'failed' && hash !== node.wanted) {
      node.wanted = hash;
      for (const relayId of this.servingPath(nodeId)) {
        const relay = this.relay(relayId);
        if (hash !== null && node.relays.get(relayId)?.hash !== hash) relay.undelivered.add(nodeId);
        else relay.undelivered.delete(nodeId);
      }
    }
    return outcome === 'generated';
  }

  /** A relay's confirmation of a node's bundle (times in epoch ms); true when it was not older than the one held. */
  private confirmed(
    relayId: string,
    nodeId: string,
    revision: number,
    hash: string,
    committed: number,
    generatedAt: number,
    distributedAt: number,
    confirmedAt: number,
    catchUp: boolean,
    now: number,
  ): boolean {
    const node = this.node(nodeId);
    const held = node.relays.get(relayId);
    if (held && held.revision > revision) return false;
    if (held) {
      held.revision = revision;
      held.hash = hash;
      held.confirmedAt = confirmedAt;
    } else node.relays.set(relayId, { revision, hash, confirmedAt });
    const relay = this.relay(relayId);
    if (revision > relay.revision) relay.revision = revision;
    relay.confirmedAt = confirmedAt;
    if (node.wanted === null || node.wanted === hash) relay.undelivered.delete(nodeId);
    const progress = this.revision(revision);
    progress.relays.set(relayId, (progress.relays.get(relayId) ?? 0) + 1);
    const phase = catchUp ? 'catchup' : 'steady';
    if (node.counted !== hash) {
      node.counted = hash;
      this.sample('generated', phase, generatedAt - committed, now);
      this.sample('distributed', phase, distributedAt - committed, now);
    }
    this.sample('relay', phase, confirmedAt - committed, now);
    return true;
  }

  /** A node fetched a bundle from its relay (fetchedAt in epoch ms). */
  private fetched(
    relayId: string,
    nodeId: string,
    revision: number,
    hash: string,
    fetchedAt: number,
    catchUp: boolean,
    lagMs: number,
    now: number,
  ): void {
    const node = this.node(nodeId);
    if (node.fetched && node.fetched.revision > revision) return;
    node.fetched = { relayId, revision, hash, fetchedAt };
    this.sample('fetched', catchUp ? 'catchup' : 'steady', lagMs, now);
  }

  nodeStatus(nodeId: string, revision: number, known: boolean): NodeStatus | null {
    const node = this.nodes.get(nodeId);
    if (!node && !known) return null;
    const failure = this.failures.of(nodeId);
    const confirmed: NodeState['relays'] = node?.relays ?? new Map();
    return {
      nodeId,
      revision,
      generation: node?.generation ?? null,
      failure: failure
        ? {
            code: failure.code,
            message: failure.message,
            directiveIds: failure.directiveIds,
            ruleIds: failure.ruleIds,
            sinceRevision: failure.sinceRevision,
            since: failure.since,
          }
        : null,
      relays: [...new Set([...this.servingPath(nodeId), ...confirmed.keys()])].map((relayId) => {
        const held = confirmed.get(relayId);
        return {
          relayId,
          revision: held?.revision ?? null,
          hash: held?.hash ?? null,
          confirmedAt: held ? iso(held.confirmedAt) : null,
          current: held !== undefined && held.hash === node?.wanted,
        };
      }),
      fetched: node?.fetched
        ? {
            relayId: node.fetched.relayId,
            revision: node.fetched.revision,
            hash: node.fetched.hash,
            fetchedAt: iso(node.fetched.fetchedAt),
            current: node.fetched.hash === node.wanted,
          }
        : null,
    };
  }

  revisionProgress(revision: number): RevisionProgress | null {
    const progress = this.progress.get(revision);
    if (!progress) return null;
    return {
      revision,
      generated: progress.generated,
      unchanged: progress.unchanged,
      failed: progress.failed,
      relays: [...progress.relays]
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([relayId, delivered]) => ({ relayId, delivered })),
    };
  }

  /** Each relay of the configuration (parent first) with its sync state. */
  relays(
    configured: readonly { readonly relayId: string; readonly parentId: string | null }[],
    nodesOf: (relayId: string) => number,
  ): RelaySync[] {
    return configured.map(({ relayId, parentId }) => {
      const state = this.relayState.get(relayId);
      return {
        relayId,
        parentId,
        revision: state?.revision ?? 0,
        behind: state?.undelivered.size ?? 0,
        confirmedAt: state?.confirmedAt == null ? null : iso(state.confirmedAt),
        nodes: nodesOf(relayId),
      };
    });
  }

  /**
   * The newest revision nodes were generated at, and the newest whose bundles are all in the root
   * feed: a revision that changed no bundle (or only failed) is distributed once what came before is.
   */
  revisions(): { readonly generated: number; readonly distributed: number } {
    const root = this.relayState.get('root');
    const distributed = root && root.undelivered.size === 0 ? this.newestGenerated : (root?.revision ?? 0);
    return { generated: this.newestGenerated, distributed };
  }

  throughput(now = Date.now()): {
    changesPerSecond: number;
    nodesGeneratedPerSecond: number;
    bundlesDeliveredPerSecond: number;
  } {
    return {
      changesPerSecond: this.changesRate.perSecond(now),
      nodesGeneratedPerSecond: this.generatedRate.perSecond(now),
      bundlesDeliveredPerSecond: this.deliveredRate.perSecond(now),
    };
  }

  lag(windowSeconds: number, now = Date.now()): LagReport {
    const since = now - windowSeconds * 1000;
    const report = (phase: string): StageLag[] =>
      STAGES.map((stage) => {
        const values = (this.samples.get(`${stage}|${phase}`) ?? [])
          .filter((sample) => sample.at >= since)
          .map((sample) => sample.ms)
          .sort((a, b) => a - b);
        return {
          stage,
          count: values.length,
          p50: percentile(values, 0.5),
          p95: percentile(values, 0.95),
          p99: percentile(values, 0.99),
          max: values.length === 0 ? null : (values[values.length - 1] ?? null),
        };
      });
    return { windowSeconds, steady: report('steady'), catchUp: report('catchup') };
  }

  /** A node left the fleet: it fails no more, and no relay owes it a bundle. */
  forget(nodeIds: Iterable<string>): void {
    const gone = [...nodeIds];
    this.failures.forget(gone);
    for (const nodeId of gone) {
      this.nodes.delete(nodeId);
      for (const relay of this.relayState.values()) relay.undelivered.delete(nodeId);
    }
  }

  private node(nodeId: string): NodeState {
    let node = this.nodes.get(nodeId);
    if (!node)
      this.nodes.set(
        nodeId,
        (node = { generation: null, wanted: null, relays: new Map(), counted: null, fetched: null }),
      );
    return node;
  }

  private relay(relayId: string) {
    let relay = this.relayState.get(relayId);
    if (!relay)
      this.relayState.set(
        relayId,
        (relay = { revision: 0, confirmedAt: null, undelivered: new Set<string>() }),
      );
    return relay;
  }

  private revision(revision: number) {
    let progress = this.progress.get(revision);
    if (!progress) {
      this.progress.set(revision, (progress = { generated: 0, unchanged: 0, failed: 0, relays: new Map() }));
      const kept = this.options.revisionsKept ?? 1_000;
      if (this.progress.size > kept) {
        const oldest = Math.min(...this.progress.keys());
        this.progress.delete(oldest);
      }
    }
    return progress;
  }

  private sample(stage: LagStageName, phase: string, ms: number, now: number): void {
    const key = `${stage}|${phase}`;
    let samples = this.samples.get(key);
    if (!samples) this.samples.set(key, (samples = []));
    samples.push({ at: now, ms: Math.max(0, ms) });
    const windowStart = now - (this.options.windowMs ?? 600_000);
    const max = this.options.maxSamples ?? 50_000;
    // Trimmed in steps, not at every sample: dropping from the front moves the whole array.
    if (samples.length > max * 1.1) samples.splice(0, samples.length - max);
    if ((samples[0]?.at ?? now) < windowStart && samples.length % 256 === 0) {
      let drop = 0;
      while (drop < samples.length && (samples[drop]?.at ?? now) < windowStart) drop++;
      samples.splice(0, drop);
    }
  }
}
