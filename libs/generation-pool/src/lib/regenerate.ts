import type { GenerationEngine, NodeBundle, Regeneration } from '@policygen/engine';
import type { GenerationPool } from './pool';

export interface ParallelRegenerateOptions {
  readonly onBundle?: (bundle: NodeBundle) => void;
  readonly generatedAt?: number;
}

/**
 * The key a node's pending result is compared on, as the engine itself computes it.
 *
 * GenerationEngine keeps it private (`unchangedInputs` only compares), and a result computed in a
 * worker carries the worker's key, which means nothing to this engine. Until the engine exposes
 * `inputsKey(nodeId)`, this reads its generator; the check makes an engine refactoring fail here,
 * loudly, rather than skip nodes wrongly.
 */
function inputsKeyReader(engine: GenerationEngine): (nodeId: string) => string {
  const generator = (engine as unknown as { generator?: { inputsKey?: unknown } }).generator;
  const inputsKey = generator?.inputsKey;
  if (typeof inputsKey !== 'function') {
    throw new Error('GenerationEngine no longer has generator.inputsKey: regenerateInParallel needs a public inputsKey');
  }
  return (nodeId) => String(inputsKey.call(generator, nodeId));
}

/**
 * `engine.regenerate()`, with the pending nodes whose inputs changed computed by the pool. The skip
 * check and the commit happen on `engine`, chunk by chunk in node order, so the Regeneration, the
 * held results and the `onBundle` calls are those of `engine.regenerate()`.
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
  const keyOf = inputsKeyReader(engine);
  const candidates = engine.pendingNodes();
  const toCompute: string[] = [];
  const keys = new Map<string, string>();
  let skipped = 0;
  for (const nodeId of candidates) {
    const key = keyOf(nodeId);
    const held = engine.result(nodeId);
    if (held && engine.unchangedInputs(nodeId, key)) {
      skipped++;
      // Recommitting the held result only takes the node off the pending set.
      engine.commit([held]);
      continue;
    }
    toCompute.push(nodeId);
    keys.set(nodeId, key);
  }

  const changed: string[] = [];
  const { onBundle } = options;
  await pool.computeInChunks(
    toCompute,
    {
      materialise: onBundle !== undefined,
      ...(options.generatedAt === undefined ? {} : { generatedAt: options.generatedAt }),
    },
    ({ results, bundles }) => {
      if (engine.revision !== revision) {
        throw new Error(
          `the engine moved from revision ${revision} to ${engine.revision} during a parallel regeneration`,
        );
      }
      const chunkChanged = engine.commit(
        results.map((result) => ({ ...result, inputsKey: keys.get(result.nodeId) ?? result.inputsKey })),
      );
      changed.push(...chunkChanged);
      if (onBundle) {
        const byNode = new Map(bundles.map((bundle) => [bundle.nodeId, bundle]));
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
