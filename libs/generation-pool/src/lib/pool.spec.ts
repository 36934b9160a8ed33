import { GenerationEngine } from '@policygen/engine';
import type { Fleet } from '@policygen/engine';
import { BUILT_WORKER, comparable, demoFleet, randomChangeSets } from '../testing/fixtures';
import { GenerationPool } from './pool';

const GENERATED_AT = 1_700_000_000_000;

/** What a fresh single-threaded engine at this fleet and revision computes, node by node. */
function reference(fleet: Fleet, revision: number, nodeIds: readonly string[]) {
  const engine = GenerationEngine.fromFleet(fleet, { revision });
  const computed = nodeIds.map((nodeId) =>
    engine.compute(nodeId, { materialise: true, generatedAt: GENERATED_AT }),
  );
  return {
    results: computed.map(({ result }) => comparable(result)),
    bundles: computed.map(({ bundle }) => bundle),
  };
}

/** Checks the pool against the single-threaded engine; returns how many nodes failed. */
async function expectSameAsSingleThreaded(
  pool: GenerationPool,
  fleet: Fleet,
  revision: number,
): Promise<number> {
  const nodeIds = fleet.nodes.map((node) => node.id).sort();
  const output = await pool.compute(nodeIds, { materialise: true, generatedAt: GENERATED_AT });
  const expected = reference(fleet, revision, nodeIds);
  expect(output.results.map((result) => result.nodeId)).toEqual(nodeIds);
  expect(output.results.map(comparable)).toEqual(expected.results);
  expect(output.bundles).toEqual(expected.bundles);
  return output.results.filter((result) => result.status === 'failed').length;
}

describe('GenerationPool', () => {
  const fleet = demoFleet();

  it('computes the demo fleet as the single-threaded engine does, node for node', async () => {
    // Small chunks, so both threads compute part of the fleet.
    const pool = await GenerationPool.start({ fleet, threads: 2, chunkSize: 16, workerFile: BUILT_WORKER });
    try {
      expect(pool.size).toBe(2);
      await expectSameAsSingleThreaded(pool, fleet, 0);
      const unmaterialised = await pool.compute(['web-par-001', 'db-ber-001']);
      expect(unmaterialised.bundles).toEqual([]);
      expect(unmaterialised.results.map((result) => result.nodeId)).toEqual(['web-par-001', 'db-ber-001']);
    } finally {
      await pool.close();
    }
  });

  it('keeps every worker at the caller revision through a series of change sets', async () => {
    const engine = GenerationEngine.fromFleet(fleet);
    const pool = await GenerationPool.start({ fleet, threads: 2, chunkSize: 8, workerFile: BUILT_WORKER });
    try {
      const changes = randomChangeSets(9, () => engine.toFleet());
      let applied = 0;
      let failed = 0;
      for (let attempt = 0; applied < 12 && attempt < 100; attempt++) {
        const outcome = engine.apply(changes.next().value);
        if (!outcome.ok) continue;
        applied++;
        // Not awaited on purpose: the compute below must still see it applied on every thread.
        void pool.applyValid(outcome.change);
        expect(pool.revision).toBe(engine.revision);
        if (applied % 3 === 0)
          failed += await expectSameAsSingleThreaded(pool, engine.toFleet(), engine.revision);
      }
      expect(applied).toBe(12);
      // The seed is one whose change sets make nodes fail: errors are compared too.
      expect(failed).toBeGreaterThan(0);
    } finally {
      await pool.close();
    }
  });

  it('starts at the engine revision it is given', async () => {
    const pool = await GenerationPool.start({
      fleet,
      threads: 1,
      engine: { revision: 7, ordering: 'title-hash' },
      workerFile: BUILT_WORKER,
    });
    try {
      expect(pool.revision).toBe(7);
      const engine = GenerationEngine.fromFleet(fleet, { revision: 7, ordering: 'title-hash' });
      const nodeIds = ['app-lyo-001', 'web-nyc-002'];
      const output = await pool.compute(nodeIds, { materialise: true });
      expect(output.bundles).toEqual(nodeIds.map((nodeId) => engine.bundle(nodeId)));
    } finally {
      await pool.close();
    }
  });
});
