import { GenerationEngine } from '@policygen/engine';
import type { EngineOptions, Fleet, NodeBundle, NodeResult, Regeneration } from '@policygen/engine';
import type { GenerationPool } from './pool';
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
export async function regenerateInParallel(
  engine: GenerationEngine,
  pool: GenerationPool,
  options: ParallelRegenerateOptions = {},
): Promise<Regeneration> {
  const revision = engine.revision;
  if (pool.revision !== revision) {
    throw new Error(
      `the generation pool is at revision ${pool.revision}, the engine at ${revision}: ` +
        'replay every change set the engine applies on the pool (pool.applyValid)',
    );
  }
  const candidates = engine.pendingNodes();
  const entries = candidates.map((nodeId) => {
    const heldKey = engine.result(nodeId)?.inputsKey;
    return heldKey === undefined ? { nodeId } : { nodeId, heldKey };
  });

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
  const memberships = { groupsOfNode: new Map<string, string[]>(), rulesOfNode: new Map<string, string[]>() };
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
