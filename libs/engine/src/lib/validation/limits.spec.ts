import fc from 'fast-check';
import type { PathSegment } from './json-path';
import { tooDeep } from './limits';

/** The depth check as it was first written: a path built for every value. The reference. */
function tooDeepByEveryPath(value: unknown, maxDepth: number): PathSegment[] | undefined {
  const waiting: { value: unknown; path: PathSegment[] }[] = [{ value, path: [] }];
  for (let entry = waiting.pop(); entry !== undefined; entry = waiting.pop()) {
    if (typeof entry.value !== 'object' || entry.value === null) continue;
    if (entry.path.length >= maxDepth) return entry.path;
    const at = entry.path;
    if (Array.isArray(entry.value))
      entry.value.forEach((item, index) => waiting.push({ value: item, path: [...at, index] }));
    else
      for (const [key, item] of Object.entries(entry.value as object))
        waiting.push({ value: item, path: [...at, key] });
  }
  return undefined;
}

describe('the depth check', () => {
  it('finds the same container as a walk that builds every path', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 7 }), fc.integer({ min: 0, max: 8 }), (value, maxDepth) => {
        expect(tooDeep(value, maxDepth)).toEqual(tooDeepByEveryPath(value, maxDepth));
      }),
      { numRuns: 2000 },
    );
  });

  it('walks a document nested 100,000 levels deep without the stack', () => {
    let deep: unknown = 1;
    for (let level = 0; level < 100_000; level++) deep = level % 2 === 0 ? [deep] : { k: deep };
    expect(tooDeep(deep, 64)).toHaveLength(64);
  });
});
