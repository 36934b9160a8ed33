import { GenerationEngine } from '@policygen/engine';
import type { NodeBundle, Regeneration } from '@policygen/engine';
import { BUILT_WORKER, comparable, demoFleet, randomChangeSets } from '../testing/fixtures';
import { GenerationPool } from './pool';
import { generateFleetInParallel, regenerateInParallel, regenerateOutcomesInParallel } from './regenerate';
import type { PoolNodeOutcome } from './regenerate';

const GENERATED_AT = 1_700_000_000_000;

function heldResults(engine: GenerationEngine) {
  return [...engine.allResults().values()].map(comparable).sort((a, b) => (a.nodeId < b.nodeId ? -1 : 1));
}

describe('regenerateInParallel', () => {
  const fleet = demoFleet();

  // Seeds whose change sets make some runs skip nodes and some nodes fail.
  it.each([4, 15])('regenerates as engine.regenerate() does, run after run (seed %i)', async (seed) => {
    const single = GenerationEngine.fromFleet(fleet);
    const parallel = GenerationEngine.fromFleet(fleet);
    const pool = await GenerationPool.start({ fleet, threads: 2, chunkSize: 32, workerFile: BUILT_WORKER });
    try {
      const runs: { single: Regeneration; parallel: Regeneration }[] = [];
      const regenerateBoth = async (): Promise<void> => {
        const singleBundles: NodeBundle[] = [];
        const parallelBundles: NodeBundle[] = [];
        const singleRun = single.regenerate({
          onBundle: (bundle) => singleBundles.push(bundle),
          generatedAt: GENERATED_AT,
        });
        const parallelRun = await regenerateInParallel(parallel, pool, {
          onBundle: (bundle) => parallelBundles.push(bundle),
          generatedAt: GENERATED_AT,
        });
        expect(parallelRun).toEqual(singleRun);
        expect(parallelBundles).toEqual(singleBundles);
        expect(parallel.pendingNodes()).toEqual([]);
        expect(heldResults(parallel)).toEqual(heldResults(single));
        runs.push({ single: singleRun, parallel: parallelRun });
      };

      await regenerateBoth();
      const changes = randomChangeSets(seed, () => single.toFleet());
      let applied = 0;
      for (let attempt = 0; applied < 15 && attempt < 100; attempt++) {
        const input = changes.next().value;
        const outcome = single.apply(input);
        const mirrored = parallel.apply(input);
        expect(mirrored.ok).toBe(outcome.ok);
        if (!outcome.ok || !mirrored.ok) continue;
        applied++;
        await pool.applyValid(mirrored.change);
        // Two change sets between some regenerations: their affected nodes coalesce.
        if (applied % 3 !== 1) await regenerateBoth();
      }
      expect(applied).toBe(15);
      expect(runs.some((run) => run.single.skipped > 0)).toBe(true);
      expect(runs.some((run) => run.single.removed.length > 0)).toBe(true);
    } finally {
      await pool.close();
    }
  });

  it('never skips a node on a key its workers did not make, as engines and pools come and go', async () => {
    const single = GenerationEngine.fromFleet(fleet);
    const mixed = GenerationEngine.fromFleet(fleet);
    single.regenerate({ generatedAt: GENERATED_AT });
    // Results held with the engine's own keys: no worker can vouch for them.
    mixed.regenerate({ generatedAt: GENERATED_AT });
    let pool = await GenerationPool.start({ fleet, threads: 2, chunkSize: 32, workerFile: BUILT_WORKER });
    try {
      const changes = randomChangeSets(4, () => single.toFleet());
      let applied = 0;
      // Nodes the single engine skipped and the parallel path recomputed, their key not its workers'.
      let distrusted = 0;
      for (let attempt = 0; applied < 9 && attempt < 100; attempt++) {
        const input = changes.next().value;
        const outcome = single.apply(input);
        const mirrored = mixed.apply(input);
        if (!outcome.ok || !mirrored.ok) continue;
        applied++;
        await pool.applyValid(mirrored.change);
        if (applied === 6) {
          // A new pool: the keys of the old one's workers mean nothing to it.
          await pool.close();
          pool = await GenerationPool.start({
            fleet: mixed.toFleet(),
            engine: { revision: mixed.revision },
            threads: 2,
            workerFile: BUILT_WORKER,
          });
        }
        const singleRun = single.regenerate({ generatedAt: GENERATED_AT });
        const parallelRun = await regenerateInParallel(mixed, pool, { generatedAt: GENERATED_AT });
        expect({ ...parallelRun, skipped: 0, recomputed: 0 }).toEqual({
          ...singleRun,
          skipped: 0,
          recomputed: 0,
        });
        expect(parallelRun.skipped).toBeLessThanOrEqual(singleRun.skipped);
        expect(heldResults(mixed)).toEqual(heldResults(single));
        distrusted += singleRun.skipped - parallelRun.skipped;
      }
      expect(applied).toBe(9);
      expect(distrusted).toBeGreaterThan(0);
    } finally {
      await pool.close();
    }
  });

  it('computes nothing when nothing is pending', async () => {
    const engine = GenerationEngine.fromFleet(fleet);
    engine.regenerate();
    const pool = await GenerationPool.start({ fleet, threads: 1, workerFile: BUILT_WORKER });
    try {
      expect(await regenerateInParallel(engine, pool)).toEqual({
        revision: 0,
        candidates: 0,
        skipped: 0,
        recomputed: 0,
        changed: [],
        removed: [],
      });
    } finally {
      await pool.close();
    }
  });

  it('refuses a pool at another revision than the engine', async () => {
    const engine = GenerationEngine.fromFleet(fleet);
    const outcome = engine.apply({ upsert: { parameters: { extra: 1 } } });
    expect(outcome.ok).toBe(true);
    const pool = await GenerationPool.start({ fleet, threads: 1, workerFile: BUILT_WORKER });
    try {
      await expect(regenerateInParallel(engine, pool)).rejects.toThrow(
        'the generation pool is at revision 0, the engine at 1',
      );
      expect(engine.pendingNodes()).toHaveLength(fleet.nodes.length);
    } finally {
      await pool.close();
    }
  });

  it('generates a whole fleet on the pool as one engine does, and follows it with change sets', async () => {
    const single = GenerationEngine.fromFleet(fleet);
    const singleRun = single.regenerate();
    const pool = await GenerationPool.start({ fleet, threads: 2, workerFile: BUILT_WORKER });
    try {
      const { engine, regeneration } = await generateFleetInParallel(fleet, pool);
      expect(regeneration).toEqual(singleRun);
      expect(engine.pendingNodes()).toEqual([]);
      expect(heldResults(engine)).toEqual(heldResults(single));

      const changes = randomChangeSets(4, () => single.toFleet());
      for (let applied = 0, attempt = 0; applied < 5 && attempt < 50; attempt++) {
        const input = changes.next().value;
        const outcome = single.apply(input);
        const mirrored = engine.apply(input);
        expect(mirrored.ok).toBe(outcome.ok);
        if (!outcome.ok || !mirrored.ok) continue;
        applied++;
        await pool.applyValid(mirrored.change);
      }
      const singleNext = single.regenerate();
      expect(await regenerateInParallel(engine, pool)).toEqual(singleNext);
      expect(heldResults(engine)).toEqual(heldResults(single));
    } finally {
      await pool.close();
    }
  });

  it('hands over, chunk by chunk and paced by a slow consumer, the outcomes regenerateNode gives, owned nodes only', async () => {
    const owns = (nodeId: string): boolean => nodeId.charCodeAt(nodeId.length - 1) % 3 !== 0;
    const single = GenerationEngine.fromFleet(fleet);
    const parallel = GenerationEngine.fromFleet(fleet);
    single.setOwnership(owns);
    parallel.setOwnership(owns);
    const pool = await GenerationPool.start({ fleet, threads: 2, chunkSize: 16, workerFile: BUILT_WORKER });
    try {
      const regenerateBoth = async (): Promise<void> => {
        const expected: PoolNodeOutcome[] = single.pendingNodes().map((nodeId) => {
          const regeneration = single.regenerateNode(nodeId, {
            materialise: true,
            generatedAt: GENERATED_AT,
          });
          const bundle = regeneration.skipped ? undefined : regeneration.bundle;
          return { nodeId, regeneration, ...(bundle ? { bundle } : {}) };
        });
        const received: PoolNodeOutcome[] = [];
        let consuming = 0;
        const run = await regenerateOutcomesInParallel(parallel, pool, {
          generatedAt: GENERATED_AT,
          onOutcomes: async (outcomes) => {
            // One chunk at a time: the next waits for this one.
            expect(consuming++).toBe(0);
            await new Promise((resolve) => setTimeout(resolve, 5));
            received.push(...outcomes);
            consuming--;
          },
        });
        const comparableOutcome = (outcome: PoolNodeOutcome) => ({
          nodeId: outcome.nodeId,
          skipped: outcome.regeneration.skipped,
          changed: outcome.regeneration.skipped ? false : outcome.regeneration.changed,
          result: comparable(outcome.regeneration.result),
          bundle: outcome.bundle ?? null,
        });
        // The pool skips only on its own workers' keys: compare what is published, not how.
        const published = (outcomes: PoolNodeOutcome[]) =>
          outcomes.filter((outcome) => outcome.bundle !== undefined).map(comparableOutcome);
        expect(received.map((outcome) => outcome.nodeId)).toEqual(expected.map((outcome) => outcome.nodeId));
        expect(published(received)).toEqual(published(expected));
        expect(run.changed).toEqual(published(expected).map((outcome) => outcome.nodeId));
        expect(received.every((outcome) => owns(outcome.nodeId))).toBe(true);
        expect(parallel.pendingNodes()).toEqual([]);
        expect(heldResults(parallel)).toEqual(heldResults(single));
      };
      await regenerateBoth();
      const changes = randomChangeSets(9, () => single.toFleet());
      let applied = 0;
      for (let attempt = 0; applied < 6 && attempt < 100; attempt++) {
        const input = changes.next().value;
        const outcome = single.apply(input);
        const mirrored = parallel.apply(input);
        if (!outcome.ok || !mirrored.ok) continue;
        applied++;
        await pool.applyValid(mirrored.change);
        await regenerateBoth();
      }
      expect(applied).toBe(6);
    } finally {
      await pool.close();
    }
  });

  it('replays a burst of change sets not awaited one by one, as one batch, to the same results', async () => {
    const single = GenerationEngine.fromFleet(fleet);
    const parallel = GenerationEngine.fromFleet(fleet);
    single.regenerate({ generatedAt: GENERATED_AT });
    const pool = await GenerationPool.start({ fleet, threads: 2, chunkSize: 32, workerFile: BUILT_WORKER });
    try {
      await regenerateInParallel(parallel, pool, { generatedAt: GENERATED_AT });
      for (const round of [0, 1]) {
        const changes = randomChangeSets(21 + round, () => single.toFleet());
        const replays: Promise<void>[] = [];
        let applied = 0;
        for (let attempt = 0; applied < 12 && attempt < 100; attempt++) {
          const input = changes.next().value;
          const outcome = single.apply(input);
          const mirrored = parallel.apply(input);
          if (!outcome.ok || !mirrored.ok) continue;
          applied++;
          replays.push(pool.applyValid(mirrored.change));
        }
        expect(pool.revision).toBe(parallel.revision);
        await Promise.all(replays);
        const singleRun = single.regenerate({ generatedAt: GENERATED_AT });
        const parallelRun = await regenerateInParallel(parallel, pool, { generatedAt: GENERATED_AT });
        expect({ ...parallelRun, skipped: 0, recomputed: 0 }).toEqual({
          ...singleRun,
          skipped: 0,
          recomputed: 0,
        });
        expect(heldResults(parallel)).toEqual(heldResults(single));
      }
    } finally {
      await pool.close();
    }
  });
});
