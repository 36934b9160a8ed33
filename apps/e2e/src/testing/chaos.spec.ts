import fc from 'fast-check';
import { FAULT_KINDS, planFaults } from './chaos';

describe('chaos plans', () => {
  it('are reproducible: a seed always gives the same faults, within their bounds', () => {
    fc.assert(
      fc.property(
        fc.integer(),
        fc.integer({ min: 0, max: 40 }),
        fc.integer({ min: 0, max: 60_000 }),
        (seed, count, maxDownMs) => {
          const plan = planFaults(seed, count, maxDownMs);
          expect(planFaults(seed, count, maxDownMs)).toEqual(plan);
          expect(plan).toHaveLength(count);
          for (const fault of plan) {
            expect(FAULT_KINDS).toContain(fault.kind);
            expect(fault.downMs).toBeGreaterThanOrEqual(0);
            expect(fault.downMs).toBeLessThanOrEqual(maxDownMs);
            expect(fault.afterMs).toBeGreaterThanOrEqual(1_000);
          }
        },
      ),
      { numRuns: 50 },
    );
  });

  it('differ from seed to seed', () => {
    const plans = new Set([1, 2, 3, 4, 5].map((seed) => JSON.stringify(planFaults(seed, 6, 10_000))));
    expect(plans.size).toBe(5);
  });
});
