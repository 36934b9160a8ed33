import type { Distribution } from './distribution-stats';
import type { ProcessRole } from './per-node';
import { ioPerNode, perNodeCost } from './per-node';
import type { PipelineReport, ProcessReport } from './report';
import { formatPerNodeTable, formatPipelineTable, scaleOutOf } from './report';

const distribution: Distribution = { count: 1, p50: 1, p95: 1, p99: 1, max: 1 };
const work = { nodeChanges: 1_000, nodes: 10_000 };

function processOf(
  name: string,
  role: ProcessRole,
  importSeconds: number,
  steadySeconds: number,
): ProcessReport {
  return {
    name,
    role,
    peakRssMiB: 300,
    peakRssMiBByPhase: { import: 250, steady: 280 },
    cpuSeconds: importSeconds + steadySeconds,
    cpuSecondsByPhase: { import: importSeconds, steady: steadySeconds, drain: 0 },
    helperThreadsCpuSecondsByPhase: { import: importSeconds / 4, steady: steadySeconds / 2, drain: 0 },
    wakeUpsByPhase: { import: 400, steady: 900, drain: 100 },
    steadyWakeUpsPerNodeChange: 1,
    ioBytesByPhase: { import: { read: 10_240_000, written: 20_480_000, disk: 1_024_000 } },
    ...ioPerNode({ import: { read: 10_240_000, written: 20_480_000, disk: 1_024_000 } }, work),
    ...perNodeCost({ importSeconds, steadySeconds }, work, 0.5),
  };
}

function reportWith(generators: number, otherBuild?: string): PipelineReport {
  const processes = [
    processOf('config-service', 'service', 5, 2),
    ...Array.from({ length: generators }, (_, index) =>
      processOf(`generator g${index + 1}`, 'service', 10, 3),
    ),
    processOf('bench (this process)', 'bench', 1, 1),
    processOf('relay fresh', 'fresh relay', 0, 0),
  ];
  const generatorReports = processes.filter((process) => process.name.startsWith('generator'));
  return {
    yardstick: {
      engineMsPerNode: 0.5,
      engineWallMsPerNode: 0.6,
      roundsMsPerNode: [0.5, 0.49, 0.52],
      paced: { engineMsPerNode: 0.8, timesRuler: 1.6, slices: 12, nodesPerSlice: 64, pauseMs: 150 },
      nodesTimed: 2_000,
      warmUpNodes: 500,
      method: 'the method, in a sentence.',
    },
    rulerAfterRun: {
      engineMsPerNode: 0.55,
      roundsMsPerNode: [0.55, 0.54, 0.56],
      driftPercent: 10,
      servicesTimesMeanRuler: { steady: 9.52, import: 2.86 },
    },
    machine: {
      cpus: 2,
      node: 'v20',
      loadAverageBefore: [0, 0, 0],
      loadAverageAfter: [1, 1, 1],
      serviceNodeOptions: [],
    },
    fleet: { nodes: 10_000, seed: 1, nodesWithBundle: 10_000, failedNodes: 0 },
    generators,
    namespace: 'bench-x',
    import: {
      revision: 1,
      commitMs: 10,
      secondsTo99: 1,
      secondsTo100: 2,
      nodesPerSecond: 5_000,
      hashMismatches: 0,
    },
    steady: {
      rate: 20,
      seconds: 30,
      changeSets: 600,
      committed: 600,
      failedCommits: 0,
      byKind: { 'node-property': 500, 'directive-parameter': 50, 'group-property': 50 },
      reachRanges: { directive: { min: 1, max: 2, candidates: 3 }, group: { min: 1, max: 2, candidates: 3 } },
      nodeChanges: 1_000,
      withoutBundleChange: 0,
      commitMs: distribution,
      generatedLagMs: distribution,
      distributedLagMs: distribution,
      lagMs: distribution,
      backlogAtStop: 0,
      drainedSeconds: 0,
      committedInOrder: true,
      committedPerSecond: 20,
    },
    verification: { nodesCompared: 10_000, mismatches: 0, httpChecked: 600, httpMismatches: 0 },
    freshRelay: {
      nodes: 10_000,
      seconds: 3,
      requests: 20,
      requestsSource: 'parent-requests-metric',
      blobFetches: 10,
    },
    perNode: {
      nodeChanges: 1_000,
      nodesWithBundle: 10_000,
      steadyPhases: ['steady', 'drain'],
      services: {
        names: ['config-service', ...generatorReports.map((process) => process.name)],
        ...perNodeCost({ importSeconds: 5 + 10 * generators, steadySeconds: 2 + 3 * generators }, work, 0.5),
      },
      configServiceSteadyTimesEngine: 4,
    },
    processes,
    infrastructure: {
      processes: [processOf('kafka', 'infrastructure', 2, 4)],
      notSampled: ['postgres (our database): on db.example, not this machine'],
    },
    peakRssMiB: Object.fromEntries(processes.map((process) => [process.name, process.peakRssMiB])),
    ...scaleOutOf(
      generatorReports,
      new Map(
        generatorReports.map((process, index) => [
          process.name,
          otherBuild !== undefined && index === generatorReports.length - 1
            ? otherBuild
            : '/tree/dist/generator-service/main.js',
        ]),
      ),
    ),
  };
}

describe('formatPerNodeTable', () => {
  const lines = formatPerNodeTable(reportWith(1));
  const rowOf = (name: string): string[] =>
    (lines.find((line) => line.trimStart().startsWith(name)) ?? '').trim().split(/\s{2,}/);

  it('states the yardstick and how it was measured', () => {
    expect(lines[0]).toContain(
      'yardstick: 0.500 CPU ms per node (wall 0.600 ms), 2000 nodes after 500 warm-up',
    );
    expect(lines[1]).toContain('the method, in a sentence.');
    expect(lines[2]).toContain(
      'after the run, the services stopped: 0.550 CPU ms per node (+10%); the services against the mean of both: steady 9.52x, import 2.86x',
    );
    expect(lines.join('\n')).toContain('config-service steady 4.00x the engine');
  });

  it('gives each service its CPU per node change and per node, and their multiples of the yardstick', () => {
    // 2 s over 1,000 node changes, 5 s over 10,000 nodes, against 0.5 ms per node.
    expect(rowOf('config-service')).toEqual(['config-service', '2.000', '4.00x', '0.500', '1.00x']);
    expect(rowOf('services (total)')).toEqual(['services (total)', '5.000', '10.00x', '1.500', '3.00x']);
  });

  it('lists the bench process, the fresh relay and the infrastructure apart, after the total', () => {
    const total = lines.findIndex((line) => line.startsWith('services (total)'));
    const apart = lines.findIndex((line) => line.startsWith('apart'));
    const infrastructure = lines.findIndex((line) => line.startsWith('infrastructure:'));
    expect(total).toBeGreaterThan(0);
    expect(apart).toBeGreaterThan(total);
    expect(lines.findIndex((line) => line.includes('bench (this process)'))).toBeGreaterThan(apart);
    expect(lines.some((line) => line.includes('relay fresh (fresh-relay phase only)'))).toBe(true);
    expect(infrastructure).toBeGreaterThan(apart);
    expect(rowOf('kafka')).toEqual(['kafka', '4.000', '8.00x', '0.200', '0.40x']);
    expect(lines.at(-1)).toContain('infrastructure not sampled: postgres (our database)');
  });
});

describe('formatPipelineTable', () => {
  it('shows the peak RSS of each phase beside the lifetime peak', () => {
    const text = formatPipelineTable(reportWith(1));
    expect(text).toMatch(/process\s+peak RSS MiB\s+MiB import\s+MiB steady\s+MiB drain/);
    expect(text).toMatch(/config-service\s+300\s+250\s+280\s+-/);
    expect(text).not.toContain('scale-out');
  });

  it("gives each service's CPU off the main thread by phase, and its share of the phase", () => {
    const text = formatPipelineTable(reportWith(1));
    expect(text).toMatch(/CPU s off the main thread\s+import\s+steady\s+drain/);
    // config-service: 5 s of import, 2 s of steady; a quarter and a half of them off the main thread.
    expect(text).toMatch(/config-service\s+1\.3 \(25%\)\s+1\.0 \(50%\)\s+0\.0/);
    expect(text).not.toMatch(/bench \(this process\)\s+\d+\.\d \(\d+%\)/);
  });

  it("counts each process's main-thread wake-ups by phase, and per node change in the steady ones", () => {
    const text = formatPipelineTable(reportWith(1));
    expect(text).toMatch(
      /main-thread wake-ups\s+import\s+steady\s+drain\s+per node change \(steady \+ drain\)/,
    );
    expect(text).toMatch(/config-service\s+400\s+900\s+100\s+1\.00/);
  });

  it("gives each process's bytes read, written and sent to disk per node change and per node", () => {
    const text = formatPipelineTable(reportWith(1));
    expect(text).toMatch(
      /KiB read \/ written \/ to disk\s+per node change \(steady \+ drain\)\s+per node \(import\)/,
    );
    // Counters of the import only: the steady figure is unknown, not zero.
    expect(text).toMatch(/config-service\s+-\s+1\.0 \/ 2\.0 \/ 0\.1/);
    // Kafka's and Redis's too: what each hop hands them is read and written again there.
    expect(text).toMatch(/kafka\s+-\s+1\.0 \/ 2\.0 \/ 0\.1/);
  });

  it('states the warm-up apart from the measured load, with its own CPU per node change', () => {
    expect(formatPipelineTable(reportWith(1))).not.toContain('warm-up (not measured)');
    const warmedUp: PipelineReport = {
      ...reportWith(1),
      warmUp: {
        seconds: 30,
        changeSets: 600,
        committed: 600,
        nodeChanges: 2_000,
        lagMs: { ...distribution, p99: 420 },
        services: perNodeCost({ importSeconds: 0, steadySeconds: 3 }, { nodeChanges: 2_000, nodes: 0 }, 0.5),
      },
    };
    const line = formatPipelineTable(warmedUp)
      .split('\n')
      .find((text) => text.startsWith('warm-up'));
    expect(line).toBe(
      'warm-up (not measured): 20 change sets/s for 30 s: 600 committed, 2000 node changes, lag p99 420 ms; ' +
        'services 1.500 CPU ms per node change (3.00x the engine)',
    );
  });

  it("names the options every service's node ran with, and nothing when it ran as deployed", () => {
    const machineLine = (report: PipelineReport): string =>
      formatPipelineTable(report)
        .split('\n')
        .find((text) => text.startsWith('machine:')) ?? '';
    expect(machineLine(reportWith(1))).not.toContain('ran with');
    const traced: PipelineReport = {
      ...reportWith(1),
      machine: { ...reportWith(1).machine, serviceNodeOptions: ['--perf-basic-prof', '--trace-deopt'] },
    };
    expect(machineLine(traced)).toMatch(/; every service's node ran with --perf-basic-prof --trace-deopt$/);
    const profiled: PipelineReport = {
      ...reportWith(1),
      machine: { ...reportWith(1).machine, serviceProfileIntervalMs: 10 },
    };
    expect(machineLine(profiled)).toMatch(/; services profiled every 10 ms$/);
    expect(machineLine(reportWith(1))).not.toContain('profiled');
  });

  it('has a scale-out section with each generator when several run', () => {
    const text = formatPipelineTable(reportWith(2));
    expect(text).toContain('scale-out: 2 generators');
    expect(text).toMatch(/generator g2\s+3\.000\s+6\.00x\s+1\.000\s+2\.00x\s+300/);
    expect(text).not.toContain('builds compared');
    expect(reportWith(2).scaleOut?.generators.map((generator) => generator.bundle)).toEqual([
      '/tree/dist/generator-service/main.js',
      '/tree/dist/generator-service/main.js',
    ]);
  });

  it('names the build each generator ran when one ran another build (--compare-generator)', () => {
    const text = formatPipelineTable(reportWith(2, '/main/dist/generator-service/main.js'));
    expect(text).toContain('builds compared under the same load:');
    expect(text).toContain('  generator g1: /tree/dist/generator-service/main.js');
    expect(text).toContain('  generator g2: /main/dist/generator-service/main.js');
  });

  it('leaves no trailing spaces', () => {
    for (const line of formatPipelineTable(reportWith(2)).split('\n')) expect(line).toBe(line.trimEnd());
  });
});
