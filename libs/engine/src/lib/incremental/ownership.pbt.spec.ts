import fc from 'fast-check';
import { arbitraryMutations, interpretChangeSet } from '../../testing/change-set-arbitrary';
import { arbitraryFleet } from '../../testing/fleet-arbitrary';
import { validateFleet } from '../validation/validate';
import type { NodeOwnership } from './engine';
import { GenerationEngine } from './engine';
import { fleetShare } from './node-share';
import type { Fleet } from '../model/fleet';

/**
 * Scale-out (architecture.md): instances share the nodes, each following every change set but
 * generating only its own. Whatever the split, and however it moves between change sets, the
 * owners' results together are the results of one engine that owns every node, and each node's
 * removal is reported by its owner alone.
 */

/** A split of the nodes among `instances` engines: node → instance, from a per-test salt. */
function splitOf(salt: number, instances: number): (nodeId: string) => number {
  return (nodeId) => {
    let hash = salt;
    for (const char of nodeId) hash = (Math.imul(hash ^ char.charCodeAt(0), 16777619) >>> 0) % 1_000_003;
    return hash % instances;
  };
}

const ownedBy =
  (split: (nodeId: string) => number, instance: number): NodeOwnership =>
  (nodeId) =>
    split(nodeId) === instance;

const resultKey = (result: { status: string; hash: string | null; errors: readonly unknown[] }): string =>
  JSON.stringify([result.status, result.hash, result.errors]);

/** A fleet, how many instances split it, and change sets, each maybe after a rebalance (with its salt). */
const splitScenario = [
  arbitraryFleet(),
  fc.integer({ min: 2, max: 3 }),
  fc.array(
    fc.record({ mutations: arbitraryMutations(), rebalance: fc.option(fc.nat(), { nil: undefined }) }),
    { minLength: 1, maxLength: 6 },
  ),
] as const;

/** The fleet a test starts from, and one engine of it all, regenerated. */
function regeneratedWhole(file: unknown): { fleet: Fleet; whole: GenerationEngine } {
  const initial = validateFleet(file);
  if (!initial.ok) throw new Error('the fleet arbitrary gave an invalid fleet');
  const whole = GenerationEngine.fromFleet(initial.fleet);
  whole.regenerate();
  return { fleet: initial.fleet, whole };
}

/**
 * Regenerates the engine of the whole fleet and its parts: the parts report the same removals (each
 * once, by the owner, even when the node moved to it just before it went), and each node's owner
 * holds the result the whole engine holds.
 */
function regenerateAndCompare(
  whole: GenerationEngine,
  parts: readonly GenerationEngine[],
  split: (nodeId: string) => number,
): void {
  const removed = whole.regenerate().removed;
  const removedByParts = parts.flatMap((engine) => engine.regenerate().removed);
  expect(removedByParts.sort()).toEqual([...removed].sort());
  for (const [nodeId, result] of whole.allResults()) {
    const held = (parts[split(nodeId)] as GenerationEngine).result(nodeId);
    expect(held && resultKey(held)).toBe(resultKey(result));
  }
}

describe('GenerationEngine ownership', () => {
  it('engines splitting the nodes hold together what one engine holds, through change sets and moves', () => {
    fc.assert(
      fc.property(...splitScenario, (file, instances, steps) => {
        const { fleet: initial, whole } = regeneratedWhole(file);
        let split = splitOf(7, instances);
        const parts = Array.from({ length: instances }, (_, instance) => {
          const engine = GenerationEngine.fromFleet(initial);
          engine.setOwnership(ownedBy(split, instance));
          engine.regenerate();
          return engine;
        });

        for (const step of steps) {
          if (step.rebalance !== undefined) {
            split = splitOf(step.rebalance, instances);
            parts.forEach((engine, instance) => engine.setOwnership(ownedBy(split, instance)));
          }
          const { changeSet } = interpretChangeSet(whole.toFleet(), step.mutations);
          const outcome = whole.apply(JSON.parse(JSON.stringify(changeSet)));
          for (const engine of parts) {
            expect(engine.apply(JSON.parse(JSON.stringify(changeSet))).ok).toBe(outcome.ok);
          }
          regenerateAndCompare(whole, parts, split);
          for (const nodeId of whole.allResults().keys()) {
            const holders = parts.flatMap((engine, instance) => (engine.result(nodeId) ? [instance] : []));
            expect(holders).toEqual([split(nodeId)]);
          }
          for (const engine of parts) expect(engine.pendingNodes()).toEqual([]);
        }
      }),
      { numRuns: 60 },
    );
  });

  it('engines holding a share each give their nodes the results of one engine of the whole fleet', () => {
    let leftOut = 0;
    fc.assert(
      fc.property(...splitScenario, (file, instances, steps) => {
        const { fleet: initial, whole } = regeneratedWhole(file);
        let split = splitOf(7, instances);
        const shares = (fleet: Fleet, revision: number): GenerationEngine[] =>
          Array.from({ length: instances }, (_, instance) => {
            const holds = ownedBy(split, instance);
            // Loaded as a generator loads it (a snapshot cut to the share), or cut by the engine.
            const engine =
              instance === 0
                ? GenerationEngine.fromShare(fleetShare(fleet, holds), { revision, holds })
                : GenerationEngine.fromFleet(fleet, { revision, holds });
            engine.setOwnership(holds);
            engine.regenerate();
            return engine;
          });
        let parts = shares(initial, 0);

        for (const step of steps) {
          if (step.rebalance !== undefined) {
            split = splitOf(step.rebalance, instances);
            parts = shares(whole.toFleet(), whole.revision);
          }
          const { changeSet } = interpretChangeSet(whole.toFleet(), step.mutations);
          const outcome = whole.apply(JSON.parse(JSON.stringify(changeSet)));
          // A share follows the committed log: what the whole configuration refuses never reaches it.
          const applied = outcome.ok
            ? parts.map((engine) => engine.apply(JSON.parse(JSON.stringify(changeSet))))
            : [];
          expect(applied.map((each) => each.ok && each.revision)).toEqual(
            applied.map(() => outcome.revision),
          );
          regenerateAndCompare(whole, parts, split);
          parts.forEach((engine, instance) => {
            // It holds its own nodes and no other: the rest is left out of its configuration.
            const own = whole.compiled.nodeIds.filter((nodeId) => split(nodeId) === instance);
            expect([...engine.compiled.nodeIds].sort()).toEqual([...own].sort());
            leftOut += whole.compiled.nodeIds.length - own.length;
            expect(engine.pendingNodes()).toEqual([]);
          });
        }
      }),
      { numRuns: 20 },
    );
    // The property says something only where shares did leave nodes out.
    expect(leftOut).toBeGreaterThan(50);
  });

  it('forceRegeneration reports an unchanged node changed again, and only for an owned node', () => {
    const fleet = validateFleet(
      JSON.parse(
        JSON.stringify({
          nodes: [
            { id: 'n1', hostname: 'n1.example' },
            { id: 'n2', hostname: 'n2.example' },
          ],
        }),
      ),
    );
    if (!fleet.ok) throw new Error(JSON.stringify(fleet.issues));
    const engine = GenerationEngine.fromFleet(fleet.fleet);
    engine.setOwnership((nodeId) => nodeId === 'n1');
    expect(engine.regenerate().changed).toEqual(['n1']);
    engine.forceRegeneration(['n1', 'n2', 'unknown']);
    expect(engine.pendingNodes()).toEqual(['n1']);
    expect(engine.regenerate().changed).toEqual(['n1']);
  });
});
