import fc from 'fast-check';
import { countBoundedCache } from './count-bounded-cache';

describe('countBoundedCache', () => {
  it('holds at most its limit, the most recently used entries', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        fc.array(fc.tuple(fc.constantFrom('get', 'set'), fc.integer({ min: 0, max: 40 })), {
          maxLength: 200,
        }),
        (limit, operations) => {
          const cache = countBoundedCache<number, number>(limit);
          // A model of the same LRU: keys in order of use, most recent last.
          let used: number[] = [];
          const answers: (number | undefined)[] = [];
          const expected: (number | undefined)[] = [];
          for (const [operation, key] of operations) {
            if (operation === 'set') {
              cache.set(key, key * 2);
              used = [...used.filter((held) => held !== key), key].slice(-limit);
              continue;
            }
            const held = used.includes(key);
            answers.push(cache.get(key));
            expected.push(held ? key * 2 : undefined);
            if (held) used = [...used.filter((other) => other !== key), key];
          }
          expect(answers).toEqual(expected);
          expect(cache.size).toBe(used.length);
          expect([...cache.keys()].sort((a, b) => a - b)).toEqual([...used].sort((a, b) => a - b));
        },
      ),
    );
  });

  it('takes no memory for its limit before it fills', () => {
    global.gc?.();
    const before = process.memoryUsage().heapUsed;
    const caches = [1, 2, 3, 4].map(() => countBoundedCache<string, string>(1_000_000));
    const grown = process.memoryUsage().heapUsed - before;
    expect(caches.every((cache) => cache.size === 0)).toBe(true);
    // Allocated up front, four caches of a million entries would take 4 × 16 MB and more.
    expect(grown).toBeLessThan(4 * 1024 * 1024);
  });
});
