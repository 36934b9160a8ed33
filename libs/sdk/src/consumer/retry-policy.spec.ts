import fc from 'fast-check';
import { backoffDelay, retryPolicy } from './retry-policy';

describe('backoff', () => {
  it('waits within [cap × (1 − jitter), cap], the cap doubling per failure up to the longest wait', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1_000 }),
        fc.integer({ min: 0, max: 100_000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.integer({ min: 1, max: 40 }),
        fc.double({ min: 0, max: 0.999, noNaN: true }),
        (initialDelayMs, extra, jitter, failures, random) => {
          const policy = retryPolicy({ initialDelayMs, maxDelayMs: initialDelayMs + extra, jitter });
          const cap = Math.min(policy.maxDelayMs, initialDelayMs * 2 ** (failures - 1));
          const delay = backoffDelay(policy, failures, random);
          expect(delay).toBeLessThanOrEqual(cap);
          expect(delay).toBeGreaterThanOrEqual(cap * (1 - jitter) - 1e-9);
        },
      ),
    );
  });

  it('refuses a policy that cannot work, naming the setting', () => {
    expect(() => retryPolicy({ attempts: 1.5 })).toThrow('retry.attempts');
    expect(() => retryPolicy({ initialDelayMs: -1 })).toThrow('retry.initialDelayMs');
    expect(() => retryPolicy({ initialDelayMs: 100, maxDelayMs: 10 })).toThrow('retry.maxDelayMs');
    expect(() => retryPolicy({ jitter: 2 })).toThrow('retry.jitter');
  });
});
