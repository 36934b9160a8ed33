import { compareCodeUnits, GenerationEngine } from '@policygen/engine';
import type {
  EngineOptions,
  Fleet,
  NodeBundle,
  NodeRegeneration,
  NodeResult,
  Regeneration,
} from '@policygen/engine';
import type { GenerationPool, RegenerationEntry } from './pool';
import { decodeMemberships, membershipCodec } from './protocol';

export interface ParallelRegenerateOptions {
  readonly onBundle?: (bundle: NodeBundle) => void;
  readonly generatedAt?: number;
}

/**
 * `engine.regenerate()`, with the pending nodes computed by the pool: the same Regeneration, the
 * same held results, the same `onBundle` calls in the same order (nodes sorted). Results are
 * committed to `engine` chunk by chunk.
 *
 * Whether a pending node's inputs are unchanged is decided where its held result was computed: an
 * inputsKey only means something to the engine that made it. The worker of this pool that computed
 * it decides (the workers replay the same change sets, so they decide as `engine` would, unless
 * their caches evicted differently); a node whose result came from elsewhere (another pool, or
 * `engine.regenerate()`) is recomputed, never skipped on a key that could match by chance.
 *
 * The pool must be at the engine's revision (every change set applied to the engine replayed on the
 * pool), and the engine must not move while this runs: if it does, the call rejects and the nodes
 * not committed yet stay pending.
 */
/** The engine's pending nodes, each with the inputsKey of what it holds; the pool must be at its revision. */
function pendingEntries(
  engine: GenerationEngine,
  pool: GenerationPool,
): { candidates: string[]; entries: RegenerationEntry[] } {
  if (pool.revision !== engine.revision) {
    throw new Error(
      `the generation pool is at revision ${pool.revision}, the engine at ${engine.revision}: ` +
        'replay every change set the engine applies on the pool (pool.applyValid)',
    );
  }
  const candidates = engine.pendingNodes();
  const entries = candidates.map((nodeId): RegenerationEntry => {
    const heldKey = engine.result(nodeId)?.inputsKey;
    return heldKey === undefined ? { nodeId } : { nodeId, heldKey };
  });
  return { candidates, entries };
}

export async function regenerateInParallel(
  engine: GenerationEngine,
  pool: GenerationPool,
  options: ParallelRegenerateOptions = {},
): Promise<Regeneration> {
  const revision = engine.revision;
  const { candidates, entries } = pendingEntries(engine, pool);

  const changed: string[] = [];
  let skipped = 0;
  const { onBundle } = options;
  await pool.regenerateInChunks(
    entries,
    {
      materialise: onBundle !== undefined,
      ...(options.generatedAt === undefined ? {} : { generatedAt: options.generatedAt }),
    },
    (chunk) => {
      if (engine.revision !== revision) {
        throw new Error(
          `the engine moved from revision ${revision} to ${engine.revision} during a parallel regeneration`,
        );
      }
      for (const nodeId of chunk.skipped) {
        const held = engine.result(nodeId);
        if (!held) throw new Error(`a worker skipped node ${nodeId}, which has no result`);
        // Recommitting the held result only takes the node off the pending set.
        engine.commit([held]);
        skipped++;
      }
      // Sorted, and each chunk is a run of the sorted candidates: `changed` stays sorted.
      const chunkChanged = engine.commit(chunk.results);
      changed.push(...chunkChanged);
      if (onBundle) {
        const byNode = new Map(chunk.bundles.map((bundle) => [bundle.nodeId, bundle]));
        for (const nodeId of chunkChanged) {
          const bundle = byNode.get(nodeId);
          if (bundle) onBundle(bundle);
        }
      }
    },
  );
  return {
    revision,
    candidates: candidates.length,
    skipped,
    recomputed: candidates.length - skipped,
    changed,
    removed: engine.takeRemoved(),
  };
}

/** One pending node's regeneration on the pool, as `GenerationEngine.regenerateNode` reports it. */
export interface PoolNodeOutcome {
  readonly nodeId: string;
  readonly regeneration: NodeRegeneration;
  /** The node's whole bundle, when it changed (what a publisher sends). */
  readonly bundle?: NodeBundle;
}

export interface ParallelOutcomesOptions {
  /** One run of outcomes (a chunk of the pool, nodes sorted); awaited before the next is handed over. */
  readonly onOutcomes: (outcomes: readonly PoolNodeOutcome[]) => void | Promise<void>;
  readonly generatedAt?: number;
}

/**
 * The generator service's use of the pool, for an import or a fleet-wide change (many pending nodes):
 * `regenerateInParallel` with every pending node's outcome handed over chunk by chunk, changed nodes
 * with their materialised bundles, as its loop builds them with `engine.regenerateNode(nodeId,
 * { materialise: true })`. The results are committed to `engine` before each chunk is handed over,
 * and `onOutcomes` is awaited before the next (so publishing paces the workers: only a few chunks
 * are computed ahead of it). Ownership holds: only the nodes `engine` owns are pending, so only
 * those are computed. A throwing `onOutcomes` rejects the call; the nodes not handed over yet stay
 * pending (call `engine.forceRegeneration` for those handed over but not published).
 *
 * Wiring, in the service: start the pool once on the snapshot the engine is built from
 * (`GenerationPool.start({ fleet: snapshot.fleet, engine: { revision: snapshot.revision } })`),
 * replay every change set the engine accepts with `pool.applyValid(outcome.change)`, and call this
 * when `engine.pendingNodes()` is large (say above a few thousand); below that `regenerateNode` on
 * the loop's thread costs less than the round trips. A pool that failed (a worker died) rejects
 * every later call: close it, and start a new one on the next snapshot.
 */
export async function regenerateOutcomesInParallel(
  engine: GenerationEngine,
  pool: GenerationPool,
  options: ParallelOutcomesOptions,
): Promise<Regeneration> {
  const revision = engine.revision;
  const { candidates, entries } = pendingEntries(engine, pool);
  const changed: string[] = [];
  let skipped = 0;
  await pool.regenerateInChunks(
    entries,
    { materialise: true, ...(options.generatedAt === undefined ? {} : { generatedAt: options.generatedAt }) },
    (chunk) => {
      if (engine.revision !== revision) {
        throw new Error(
          `the engine moved from revision ${revision} to ${engine.revision} during a parallel regeneration`,
        );
      }
      const outcomes = new Map<string, PoolNodeOutcome>();
      for (const nodeId of chunk.skipped) {
        const held = engine.result(nodeId);
        if (!held) throw new Error(`a worker skipped node ${nodeId}, which has no result`);
        engine.commit([held]);
        skipped++;
        outcomes.set(nodeId, { nodeId, regeneration: { skipped: true, result: held } });
      }
      const bundles = new Map(chunk.bundles.map((bundle) => [bundle.nodeId, bundle]));
      for (const result of chunk.results) {
        const nodeChanged = engine.commit([result]).length > 0;
        if (nodeChanged) changed.push(result.nodeId);
        const bundle = nodeChanged ? bundles.get(result.nodeId) : undefined;
        outcomes.set(result.nodeId, {
          nodeId: result.nodeId,
          regeneration: { skipped: false, result, changed: nodeChanged, ...(bundle ? { bundle } : {}) },
          ...(bundle ? { bundle } : {}),
        });
      }
      const sorted = [...outcomes.keys()]
        .sort(compareCodeUnits)
        .map((nodeId) => outcomes.get(nodeId) as PoolNodeOutcome);
      return options.onOutcomes(sorted);
    },
  );
  return {
    revision,
    candidates: candidates.length,
    skipped,
    recomputed: candidates.length - skipped,
    changed: changed.sort(compareCodeUnits),
    removed: engine.takeRemoved(),
  };
}

/**
 * A full generation on the pool (the pool just started on `fleet`): the workers compute every node
 * and send, with each result, the node's memberships, which they evaluated anyway to compute it;
 * the caller's engine is then built from the fleet and those memberships (no group or rule is
 * evaluated again on this thread) and the results are committed to it. The same engine state as
 * `GenerationEngine.fromFleet(fleet)` followed by `regenerateInParallel`, for the CPU time of one
 * index, not two: on a shared machine, the work saved is what makes the threads pay.
 */
export async function generateFleetInParallel(
  fleet: Fleet,
  pool: GenerationPool,
  options: EngineOptions = {},
): Promise<{ engine: GenerationEngine; regeneration: Regeneration }> {
  if (pool.revision !== (options.revision ?? 0))
    throw new Error(`the generation pool is at revision ${pool.revision}, not the fleet's`);
  const codec = membershipCodec(
    fleet.groups.map((group) => group.id),
    fleet.rules.map((rule) => rule.id),
  );
  const results: NodeResult[] = [];
  // The members of each group and rule are gathered as chunks come in, while the workers compute:
  // the engine's index then adopts them instead of building them after the last chunk.
  const sets = {
    members: codec.groupIds.map(() => new Set<string>()),
    ruleTargets: codec.ruleIds.map(() => new Set<string>()),
  };
  const memberships = {
    groupsOfNode: new Map<string, string[]>(),
    rulesOfNode: new Map<string, string[]>(),
    members: new Map(codec.groupIds.map((groupId, index) => [groupId, sets.members[index] as Set<string>])),
    ruleTargets: new Map(
      codec.ruleIds.map((ruleId, index) => [ruleId, sets.ruleTargets[index] as Set<string>]),
    ),
  };
  await pool.regenerateInChunks(
    fleet.nodes.map((node) => ({ nodeId: node.id })),
    { memberships: true },
    (chunk) => {
      if (!chunk.memberships) throw new Error('the generation pool answered without memberships');
      decodeMemberships(
        codec,
        chunk.results.map((result) => result.nodeId),
        chunk.memberships,
        memberships,
        sets,
      );
      for (const result of chunk.results) results.push(result);
    },
  );
  const engine = GenerationEngine.fromFleetAndMemberships(fleet, memberships, options);
  const changed = engine.commit(results);
  return {
    engine,
    regeneration: {
      revision: engine.revision,
      candidates: results.length,
      skipped: 0,
      recomputed: results.length,
      changed,
      removed: engine.takeRemoved(),
    },
  };
}
