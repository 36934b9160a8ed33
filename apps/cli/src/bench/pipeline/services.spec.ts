import { generatorHeapMiB } from './services';

describe('generatorHeapMiB', () => {
  it("sizes a generator's heap for the nodes it holds, at least 1 GiB", () => {
    expect(generatorHeapMiB(100_000)).toBe(1_718);
    expect(generatorHeapMiB(100_000, 2)).toBe(1_083);
    expect(generatorHeapMiB(10_000)).toBe(1_024);
    expect(generatorHeapMiB(10_000, 2)).toBe(1_024);
    // A share rounds up: no instance gets less than its nodes need.
    expect(generatorHeapMiB(100_001, 2)).toBe(generatorHeapMiB(100_002, 2));
  });
});
