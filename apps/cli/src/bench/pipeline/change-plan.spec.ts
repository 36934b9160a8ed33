import fc from 'fast-check';
import { GenerationEngine, validateFleet } from '@policygen/engine';
import type { Fleet } from '@policygen/engine';
import { buildBenchFleet } from '@policygen/fleets';
import { directiveReach, groupReach, planSteadyChanges } from './change-plan';

const bench = buildBenchFleet({ nodes: 400, seed: 2 });
const validation = validateFleet(bench.fleet);
if (!validation.ok) throw new Error('the synthetic fleet is invalid');
const fleet: Fleet = validation.fleet;

function generatedEngine(): GenerationEngine {
  const engine = GenerationEngine.fromFleet(fleet);
  engine.regenerate();
  return engine;
}

describe('the steady load plan', () => {
  it('is the same for the same seed', () => {
    const compiled = generatedEngine().compiled;
    expect(planSteadyChanges(compiled, bench.landmarks, { count: 50, seed: 4 })).toEqual(
      planSteadyChanges(compiled, bench.landmarks, { count: 50, seed: 4 }),
    );
  });

  it('picks directives and groups whose reach is in the range scaled to the fleet, or nearest to it', () => {
    const compiled = generatedEngine().compiled;
    const plan = planSteadyChanges(compiled, bench.landmarks, { count: 10, seed: 1 });
    const inRange = (reach: number, range: { min: number; max: number }): boolean =>
      reach >= range.min && reach <= range.max;
    const anyInRange = (
      candidates: readonly { reach: number }[],
      range: { min: number; max: number },
    ): boolean => candidates.some((candidate) => inRange(candidate.reach, range));
    const allInRange = (
      candidates: readonly { reach: number }[],
      range: { min: number; max: number },
    ): boolean => candidates.every((candidate) => inRange(candidate.reach, range));
    expect(
      !anyInRange(directiveReach(compiled), plan.directiveRange) ||
        allInRange(plan.directives, plan.directiveRange),
    ).toBe(true);
    expect(
      !anyInRange(groupReach(compiled), plan.groupRange) || allInRange(plan.groups, plan.groupRange),
    ).toBe(true);
    expect(plan.directives.length).toBeGreaterThan(0);
    expect(plan.groups.length).toBeGreaterThan(0);
  });

  it('gives change sets that each apply, change at least one bundle and make no node fail', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1_000_000 }), (seed) => {
        const engine = generatedEngine();
        const plan = planSteadyChanges(engine.compiled, bench.landmarks, { count: 40, seed });
        for (const change of plan.changes) {
          const outcome = engine.apply(change.changeSet);
          expect(outcome.ok).toBe(true);
          const changed = engine.regenerate().changed;
          expect(changed.length).toBeGreaterThan(0);
          for (const nodeId of changed) expect(engine.result(nodeId)?.status).toBe('ok');
          expect(
            change.kind !== 'node-property' || (changed.length === 1 && changed[0] === change.target),
          ).toBe(true);
        }
      }),
      { numRuns: 12 },
    );
  });

  it('mixes 80% node properties, 10% directive parameters and 10% group properties', () => {
    const plan = planSteadyChanges(generatedEngine().compiled, bench.landmarks, { count: 2_000, seed: 9 });
    const share = (kind: string): number =>
      plan.changes.filter((change) => change.kind === kind).length / plan.changes.length;
    expect(share('node-property')).toBeCloseTo(0.8, 1);
    expect(share('directive-parameter')).toBeCloseTo(0.1, 1);
    expect(share('group-property')).toBeCloseTo(0.1, 1);
  });
});
