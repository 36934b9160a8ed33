import fc from 'fast-check';
import { RecentDigests } from './recent-digests';

type Step =
  { readonly kind: 'note' | 'has'; readonly digest: number } | { readonly kind: 'wait'; readonly ms: number };

describe('RecentDigests', () => {
  it('knows a digest only within its maximum age of being noted, and holds at most its maximum', () => {
    const step = fc.oneof(
      fc.record({ kind: fc.constant('note' as const), digest: fc.nat(30) }),
      fc.record({ kind: fc.constant('has' as const), digest: fc.nat(30) }),
      fc.record({ kind: fc.constant('wait' as const), ms: fc.nat(400) }),
    );
    fc.assert(
      fc.property(
        fc.array(step, { maxLength: 200 }),
        fc.integer({ min: 2, max: 40 }),
        (steps: Step[], max) => {
          let clock = 0;
          const maxAgeMs = 1_000;
          const digests = new RecentDigests(maxAgeMs, max, () => clock);
          const notedAt = new Map<number, number>();
          const stale: number[] = [];
          let largest = 0;
          for (const current of steps) {
            if (current.kind === 'wait') {
              clock += current.ms;
              digests.tick();
            } else if (current.kind === 'note') {
              digests.note(String(current.digest));
              notedAt.set(current.digest, clock);
            } else {
              const at = notedAt.get(current.digest);
              // Known means noted, and not longer ago than the maximum age.
              const fresh = at !== undefined && clock - at <= maxAgeMs;
              if (digests.has(String(current.digest)) && !fresh) stale.push(current.digest);
            }
            largest = Math.max(largest, digests.size);
          }
          expect(stale).toEqual([]);
          expect(largest).toBeLessThanOrEqual(max);
        },
      ),
      { numRuns: 1_000 },
    );
  });

  it('knows what was just noted, until cleared', () => {
    const digests = new RecentDigests(60_000, 100);
    digests.note('a');
    expect(digests.has('a')).toBe(true);
    expect(digests.has('b')).toBe(false);
    digests.clear();
    expect(digests.has('a')).toBe(false);
  });

  it('still knows a digest one turn later, and forgets it two turns later', () => {
    let clock = 0;
    const digests = new RecentDigests(1_000, 100, () => clock);
    digests.note('a');
    clock = 400;
    digests.tick();
    expect(digests.has('a')).toBe(true);
    clock = 800;
    digests.tick();
    expect(digests.has('a')).toBe(false);
  });
});
