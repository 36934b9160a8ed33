import type { NodeResult, GeneratorLimits } from '../generate/node-generator';
import { NodeGenerator } from '../generate/node-generator';
import type {
  BundleEntry,
  BundleFile,
  FileDigest,
  GenerateOptions,
  NodeBundle,
  StoredDigests,
} from '../generate/types';
import type { CompiledFleet } from '../index/fleet-index';
import type { NodeMemberships } from '../index/fleet-index';
import { FleetIndex } from '../index/fleet-index';
import { validateChangeSet } from '../index/validate-change-set';
import type { ParsedChangeSet } from '../index/change-set';
import type { Fleet, OrderingMode } from '../model/fleet';
import type { ValidationIssue } from '../validation/validate';
import { compareCodeUnits } from '../text/compare';
import type { NodeShare } from './node-share';
import { changeSetShare, fleetShare } from './node-share';

export interface EngineOptions {
  /** The revision the initial configuration is at (default 0). */
  readonly revision?: number;
  /** Overrides every node's ordering mode, as `generate --ordering` does. */
  readonly ordering?: OrderingMode;
  readonly limits?: GeneratorLimits;
  /**
   * The nodes this engine holds (scale-out: an instance keeps its own share only); the others are
   * left out of its configuration and of every change set (`node-share.ts`). Default: every node.
   */
  readonly holds?: NodeShare;
}

/** Which nodes this engine generates; the others are followed in the index but never computed. */
export type NodeOwnership = (nodeId: string) => boolean;

const OWNS_EVERY_NODE: NodeOwnership = () => true;

/** One pending node's regeneration: skipped (inputs unchanged) or computed, and whether it changed. */
export type NodeRegeneration<File extends FileDigest = BundleFile> =
  | { readonly skipped: true; readonly result: NodeResult }
  | {
      readonly skipped: false;
      readonly result: NodeResult;
      readonly changed: boolean;
      readonly bundle?: NodeBundle<File>;
    };

export type ApplyOutcome =
  | {
      readonly ok: true;
      readonly revision: number;
      /** Nodes whose bundle this change set can have changed, sorted. */
      readonly affected: readonly string[];
      /** Nodes the change set deleted, sorted. */
      readonly removed: readonly string[];
      readonly change: ParsedChangeSet;
    }
  | { readonly ok: false; readonly revision: number; readonly issues: readonly ValidationIssue[] };

export interface Regeneration {
  readonly revision: number;
  /** Nodes pending regeneration when it started (the union of the change sets' affected nodes). */
  readonly candidates: number;
  /** Candidates whose inputs were unchanged: skipped without rendering. */
  readonly skipped: number;
  /** Nodes computed. */
  readonly recomputed: number;
  /** Nodes whose result (hash, status or errors) differs from the one held before, sorted. */
  readonly changed: readonly string[];
  /** Nodes removed from the fleet since the last regeneration, sorted. */
  readonly removed: readonly string[];
}

/** How a node's result compares to the one held before. */
export function sameResult(a: NodeResult | undefined, b: NodeResult): boolean {
  return (
    a !== undefined &&
    a.status === b.status &&
    a.hash === b.hash &&
    JSON.stringify(a.errors) === JSON.stringify(b.errors)
  );
}

/**
 * The incremental generator (pure, no I/O): a configuration at a revision, its dependency index,
 * the generation caches and each node's last result. Change sets move the revision and mark the
 * nodes they can affect; `regenerate` computes those once each, however many change sets marked
 * them, at the newest revision.
 */
export class GenerationEngine {
  private readonly index: FleetIndex;
  private readonly generator: NodeGenerator;
  private readonly results = new Map<string, NodeResult>();
  private readonly pending = new Set<string>();
  private readonly removedPending = new Set<string>();
  /** Nodes taken over by `setOwnership` and not generated here yet: a previous owner may have. */
  private readonly adopted = new Set<string>();
  private currentRevision: number;
  private owns: NodeOwnership = OWNS_EVERY_NODE;

  private constructor(
    fleet: Fleet,
    private readonly options: EngineOptions,
    memberships?: NodeMemberships,
    alreadyShare = false,
  ) {
    const { holds } = options;
    this.index = FleetIndex.build(holds && !alreadyShare ? fleetShare(fleet, holds) : fleet, memberships);
    this.generator = new NodeGenerator(this.index, {
      ...(options.ordering ? { ordering: options.ordering } : {}),
      ...(options.limits ? { limits: options.limits } : {}),
    });
    this.currentRevision = options.revision ?? 0;
    for (const nodeId of this.index.nodeIds) this.pending.add(nodeId);
  }

  /** An engine at the fleet's revision with every node pending (a full generation to come). */
  static fromFleet(fleet: Fleet, options: EngineOptions = {}): GenerationEngine {
    return new GenerationEngine(fleet, options);
  }

  /**
   * `fromFleet` of a fleet that is the share `options.holds` already (cut before its validation, as
   * a snapshot of the share comes): it is not cut again.
   */
  static fromShare(share: Fleet, options: EngineOptions & { readonly holds: NodeShare }): GenerationEngine {
    return new GenerationEngine(share, options, undefined, true);
  }

  /**
   * `fromFleet` with every node's memberships as other indexes of this fleet computed them (the
   * generation pool's workers): the index is not evaluated again.
   */
  static fromFleetAndMemberships(
    fleet: Fleet,
    memberships: NodeMemberships,
    options: EngineOptions = {},
  ): GenerationEngine {
    return new GenerationEngine(fleet, options, memberships);
  }

  /** The node's groups and enabled rules, sorted (see `NodeMemberships`). */
  membershipsOf(nodeId: string): { groups: readonly string[]; rules: readonly string[] } | undefined {
    const groups = this.index.groupsOfNode.get(nodeId);
    const rules = this.index.rulesOfNode.get(nodeId);
    return groups && rules ? { groups, rules } : undefined;
  }

  get revision(): number {
    return this.currentRevision;
  }

  get compiled(): CompiledFleet {
    return this.index;
  }

  toFleet(): Fleet {
    return this.index.toFleet();
  }

  /**
   * Validates a change set against the current configuration and applies it whole, or not at all
   * (the revision stays). A valid change set moves to the next revision, even when it changes no node.
   */
  apply(input: unknown): ApplyOutcome {
    const { holds } = this.options;
    const validation = validateChangeSet(holds ? changeSetShare(input, holds) : input, this.index);
    if (!validation.ok) return { ok: false, revision: this.currentRevision, issues: validation.issues };
    return this.applyShare(validation.change);
  }

  /** Applies a change set already validated against this configuration (as a worker replays it). */
  applyValid(change: ParsedChangeSet): ApplyOutcome & { ok: true } {
    const { holds } = this.options;
    return this.applyShare(holds ? changeSetShare(change, holds) : change);
  }

  /** Applies a valid change set of the nodes this engine holds. */
  private applyShare(change: ParsedChangeSet): ApplyOutcome & { ok: true } {
    const delta = this.index.apply(change);
    this.generator.invalidate(delta);
    for (const nodeId of delta.removed) {
      this.pending.delete(nodeId);
      const generatedHere = this.results.delete(nodeId);
      if (this.adopted.delete(nodeId) || generatedHere) this.removedPending.add(nodeId);
    }
    for (const nodeId of delta.affected) {
      if (!this.owns(nodeId)) continue;
      this.pending.add(nodeId);
      this.removedPending.delete(nodeId);
    }
    this.currentRevision++;
    return {
      ok: true,
      revision: this.currentRevision,
      affected: [...delta.affected].sort(compareCodeUnits),
      removed: [...delta.removed].sort(compareCodeUnits),
      change,
    };
  }

  /**
   * Restricts generation to the nodes `owns` accepts (scale-out: instances share the nodes). Nodes
   * given up are forgotten: no longer pending, no result held. Newly owned nodes become pending.
   */
  setOwnership(owns: NodeOwnership): void {
    this.owns = owns;
    for (const nodeId of this.index.nodeIds) {
      if (owns(nodeId)) {
        if (this.results.has(nodeId)) continue;
        this.pending.add(nodeId);
        this.adopted.add(nodeId);
      } else {
        this.pending.delete(nodeId);
        this.results.delete(nodeId);
        this.adopted.delete(nodeId);
      }
    }
  }

  /**
   * Marks owned nodes pending whatever their inputs, with their held results forgotten: their next
   * regeneration computes them and reports them changed (a consumer asked for them again).
   */
  forceRegeneration(nodeIds: Iterable<string>): void {
    for (const nodeId of nodeIds) {
      if (!this.index.nodes.has(nodeId) || !this.owns(nodeId)) continue;
      if (this.results.delete(nodeId)) this.adopted.add(nodeId);
      this.pending.add(nodeId);
    }
  }

  /** Nodes waiting for regeneration, sorted. */
  pendingNodes(): string[] {
    return [...this.pending].sort(compareCodeUnits);
  }

  /** Computes a node at the current revision with this engine's caches; stores nothing. */
  compute(
    nodeId: string,
    options: { readonly materialise?: boolean; readonly generatedAt?: number } = {},
  ): {
    result: NodeResult;
    bundle?: NodeBundle;
  } {
    return this.generator.generate(nodeId, {
      ...options,
      revision: this.currentRevision,
      ...(this.options.ordering ? { ordering: this.options.ordering } : {}),
    });
  }

  /**
   * `compute`, unless the node's inputs key is `inputsKey` (nothing computed: undefined); one
   * preparation of the node, where `unchangedInputs` then `compute` make two.
   */
  computeUnless(
    nodeId: string,
    inputsKey: string | undefined,
    options: { readonly materialise?: boolean; readonly generatedAt?: number } = {},
  ): { result: NodeResult; bundle?: NodeBundle } | undefined {
    // Without `stored`, every file comes with its content.
    return this.generator.generateUnless(nodeId, inputsKey, {
      ...options,
      revision: this.currentRevision,
      ...(this.options.ordering ? { ordering: this.options.ordering } : {}),
    }) as { result: NodeResult; bundle?: NodeBundle } | undefined;
  }

  /** Whether a pending node's inputs are those of its held result: it can be skipped. */
  unchangedInputs(nodeId: string, inputsKey: string = this.generator.inputsKey(nodeId)): boolean {
    return this.results.get(nodeId)?.inputsKey === inputsKey;
  }

  /**
   * Records results computed for pending nodes (here or by workers replaying the same change sets)
   * and says which differ from the ones held before.
   */
  commit(results: Iterable<NodeResult>): string[] {
    const changed: string[] = [];
    for (const result of results) {
      if (!this.index.nodes.has(result.nodeId)) continue;
      if (!sameResult(this.results.get(result.nodeId), result)) changed.push(result.nodeId);
      this.results.set(result.nodeId, result);
      this.pending.delete(result.nodeId);
      this.adopted.delete(result.nodeId);
    }
    return changed.sort(compareCodeUnits);
  }

  /** Takes the removals recorded since the last call. */
  takeRemoved(): string[] {
    const removed = [...this.removedPending].sort(compareCodeUnits);
    this.removedPending.clear();
    return removed;
  }

  /**
   * Regenerates every pending node, single-threaded. `onBundle` receives the whole bundle of each
   * node whose result changed (a failed node's bundle is its manifest: it keeps its last good files).
   */
  regenerate(
    options: { readonly onBundle?: (bundle: NodeBundle) => void; readonly generatedAt?: number } = {},
  ): Regeneration {
    const candidates = this.pendingNodes();
    const changed: string[] = [];
    let skipped = 0;
    const step = {
      materialise: options.onBundle !== undefined,
      ...(options.generatedAt === undefined ? {} : { generatedAt: options.generatedAt }),
    };
    for (const nodeId of candidates) {
      const outcome = this.regenerateNode(nodeId, step);
      if (outcome.skipped) skipped++;
      else if (outcome.changed) {
        changed.push(nodeId);
        if (outcome.bundle) options.onBundle?.(outcome.bundle);
      }
    }
    return {
      revision: this.currentRevision,
      candidates: candidates.length,
      skipped,
      recomputed: candidates.length - skipped,
      changed,
      removed: this.takeRemoved(),
    };
  }

  /**
   * Regenerates one pending node at the current revision and holds its result: the step
   * `regenerate` repeats, for callers that interleave other work (a service yielding to its I/O).
   * With `materialise`, a changed node's whole bundle comes back.
   */
  regenerateNode(
    nodeId: string,
    options?: { readonly materialise?: boolean; readonly generatedAt?: number },
  ): NodeRegeneration;
  /**
   * With `stored`: the files of a changed node's bundle whose digests the caller holds come
   * without content (and are not rendered again for it).
   */
  regenerateNode(
    nodeId: string,
    options: { readonly materialise: true; readonly generatedAt?: number; readonly stored: StoredDigests },
  ): NodeRegeneration<BundleEntry>;
  regenerateNode(
    nodeId: string,
    options: {
      readonly materialise?: boolean;
      readonly generatedAt?: number;
      readonly stored?: StoredDigests;
    } = {},
  ): NodeRegeneration<BundleEntry> {
    const held = this.results.get(nodeId);
    const generated = this.generator.generateUnless(nodeId, held?.inputsKey, {
      materialise: options.materialise ?? false,
      revision: this.currentRevision,
      ...(options.generatedAt === undefined ? {} : { generatedAt: options.generatedAt }),
      ...(options.stored === undefined ? {} : { stored: options.stored }),
    });
    this.pending.delete(nodeId);
    // Only a held result's inputs key can match, so a skipped node always has one.
    if (!generated) return { skipped: true, result: held as NodeResult };
    const { result, bundle } = generated;
    const changed = this.commit([result]).length > 0;
    return { skipped: false, result, changed, ...(changed && bundle ? { bundle } : {}) };
  }

  result(nodeId: string): NodeResult | undefined {
    return this.results.get(nodeId);
  }

  /** Every node's held result, by node id. */
  allResults(): ReadonlyMap<string, NodeResult> {
    return this.results;
  }

  /** The node's whole bundle at the current revision. */
  bundle(nodeId: string, options: Pick<GenerateOptions, 'generatedAt'> = {}): NodeBundle {
    return this.compute(nodeId, { ...options, materialise: true }).bundle as NodeBundle;
  }

  cacheStats(): ReturnType<NodeGenerator['stats']> {
    return this.generator.stats();
  }
}
