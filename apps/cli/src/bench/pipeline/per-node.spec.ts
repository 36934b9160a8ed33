import fc from 'fast-check';
import { importCpuSeconds, ioPerNode, perNodeCost, steadyTotal, timesMeanRuler } from './per-node';

describe('ioPerNode', () => {
  const kib = (read: number, written: number, disk: number) => ({
    read: read * 1024,
    written: written * 1024,
    disk: disk * 1024,
  });

  it('gives KiB per node change over the steady phase and its drain, and per node at import', () => {
    expect(
      ioPerNode(
        {
          import: kib(10_000, 20_000, 500),
          steady: kib(300, 900, 60),
          drain: kib(100, 100, 40),
          'fresh relay': kib(1e6, 1e6, 1e6),
        },
        { nodeChanges: 100, nodes: 1_000 },
      ),
    ).toEqual({
      steadyKiBPerNodeChange: { read: 4, written: 10, disk: 1 },
      importKiBPerNode: { read: 10, written: 20, disk: 0.5 },
    });
  });

  it('gives null where nothing was counted or there was no work', () => {
    expect(ioPerNode({ steady: kib(1, 1, 1) }, { nodeChanges: 0, nodes: 10 })).toEqual({
      steadyKiBPerNodeChange: null,
      importKiBPerNode: null,
    });
  });
});

describe('perNodeCost', () => {
  it('divides CPU ms by the work and by the yardstick', () => {
    expect(
      perNodeCost({ steadySeconds: 3, importSeconds: 10 }, { nodeChanges: 1_500, nodes: 10_000 }, 0.5),
    ).toEqual({
      cpuMsPerNodeChange: 2,
      cpuMsPerNode: 1,
      steadyTimesEngine: 4,
      importTimesEngine: 2,
    });
  });

  it('gives null where there is no work or no yardstick', () => {
    expect(perNodeCost({ steadySeconds: 1, importSeconds: 1 }, { nodeChanges: 0, nodes: 0 }, 1)).toEqual({
      cpuMsPerNodeChange: null,
      cpuMsPerNode: null,
      steadyTimesEngine: null,
      importTimesEngine: null,
    });
    const cost = perNodeCost({ steadySeconds: 1, importSeconds: 1 }, { nodeChanges: 10, nodes: 10 }, 0);
    expect(cost.cpuMsPerNodeChange).toBe(100);
    expect(cost.steadyTimesEngine).toBeNull();
  });

  it('adds up over processes as their CPU does', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 100_000 }), { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 1, max: 100_000 }),
        (centiseconds, nodeChanges) => {
          const seconds = centiseconds.map((value) => value / 100);
          const each = seconds.map(
            (steadySeconds) =>
              perNodeCost({ steadySeconds, importSeconds: 0 }, { nodeChanges, nodes: 1 }, 1)
                .cpuMsPerNodeChange as number,
          );
          const total = perNodeCost(
            { steadySeconds: seconds.reduce((sum, value) => sum + value, 0), importSeconds: 0 },
            { nodeChanges, nodes: 1 },
            1,
          ).cpuMsPerNodeChange as number;
          expect(Math.abs(total - each.reduce((sum, value) => sum + value, 0))).toBeLessThan(
            0.0001 * (each.length + 1),
          );
        },
      ),
    );
  });

  it("counts the steady load's CPU over the steady and drain phases, the import's over its own", () => {
    const byPhase = { import: 4, steady: 2, drain: 0.5, verification: 9, 'fresh relay': 7 };
    expect(steadyTotal(byPhase)).toBe(2.5);
    expect(importCpuSeconds(byPhase)).toBe(4);
    expect(steadyTotal({})).toBe(0);
  });
});

describe('timesMeanRuler', () => {
  it('divides by the mean of the ruler before and after the run', () => {
    // 2 ms and 1 ms against (0.4 + 0.6) / 2 = 0.5 ms per node.
    expect(timesMeanRuler({ cpuMsPerNodeChange: 2, cpuMsPerNode: 1 }, 0.4, 0.6)).toEqual({
      steady: 4,
      import: 2,
    });
  });

  it('gives null where there is no work or no ruler', () => {
    expect(timesMeanRuler({ cpuMsPerNodeChange: null, cpuMsPerNode: 1 }, 0, 0)).toEqual({
      steady: null,
      import: null,
    });
  });
});
