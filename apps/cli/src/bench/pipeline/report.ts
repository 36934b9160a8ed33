import type { ChangeKind } from './change-plan';
import type { Distribution } from './distribution-stats';
import type { PerNodeCost, ProcessRole } from './per-node';
import type { IoBytes } from './process-sampler';
import type { RulerCheck, Yardstick } from './yardstick';

export interface ProcessReport extends PerNodeCost {
  readonly name: string;
  readonly role: ProcessRole;
  /** The lifetime peak (VmHWM; a group's highest sampled sum). */
  readonly peakRssMiB: number;
  /** The highest VmRSS sampled (every 500 ms) within each phase. */
  readonly peakRssMiBByPhase: Readonly<Record<string, number>>;
  /** User + system CPU seconds over the whole run, and within each phase. */
  readonly cpuSeconds: number;
  readonly cpuSecondsByPhase: Readonly<Record<string, number>>;
  /**
   * The part of each phase's CPU seconds spent off the main thread: V8's compiler and garbage
   * collector helpers, libuv's pool. A `--cpu-prof` profile samples the main thread only.
   */
  readonly helperThreadsCpuSecondsByPhase: Readonly<Record<string, number>>;
  /**
   * Times the main thread was woken (voluntary context switches) within each phase, and those of the
   * steady phases per node change (null: no node changed): what the fixed costs of a batch grow with.
   */
  readonly wakeUpsByPhase: Readonly<Record<string, number>>;
  readonly steadyWakeUpsPerNodeChange: number | null;
  /**
   * Bytes read and written within each phase (/proc/<pid>/io: sockets, pipes and files alike; `disk`:
   * what went to storage), absent for phases whose counters could not be read (another user's process).
   */
  readonly ioBytesByPhase: Readonly<Record<string, IoBytes>>;
  /** The same in KiB per node change of the steady phases, and per node of the import (null: not counted). */
  readonly steadyKiBPerNodeChange: IoBytes | null;
  readonly importKiBPerNode: IoBytes | null;
}

/** One generator's share of the work when several run (`--generators` above 1). */
export interface ScaleOutGenerator extends PerNodeCost {
  readonly name: string;
  /** The script it ran: this tree's generator, or another build's (`--compare-generator`). */
  readonly bundle: string;
  readonly peakRssMiB: number;
  readonly peakRssMiBByPhase: Readonly<Record<string, number>>;
}

function kibCell(bytes: IoBytes | null): string {
  return bytes === null
    ? '-'
    : `${bytes.read.toFixed(1)} / ${bytes.written.toFixed(1)} / ${bytes.disk.toFixed(1)}`;
}

/** The `scaleOut` part of a report: each generator's share, when several ran. */
export function scaleOutOf(
  generators: readonly ProcessReport[],
  bundles: ReadonlyMap<string, string>,
): {
  readonly scaleOut?: { readonly generators: readonly ScaleOutGenerator[] };
} {
  if (generators.length < 2) return {};
  return {
    scaleOut: {
      generators: generators.map((process) => ({
        name: process.name,
        bundle: bundles.get(process.name) ?? '',
        cpuMsPerNodeChange: process.cpuMsPerNodeChange,
        cpuMsPerNode: process.cpuMsPerNode,
        steadyTimesEngine: process.steadyTimesEngine,
        importTimesEngine: process.importTimesEngine,
        peakRssMiB: process.peakRssMiB,
        peakRssMiBByPhase: process.peakRssMiBByPhase,
      })),
    },
  };
}

export interface PipelineReport {
  /** This process's single-thread engine time per node: the unit the services' CPU is counted in. */
  readonly yardstick: Yardstick;
  /** The ruler timed again once the services stopped, and the services' multiples against the mean of both. */
  readonly rulerAfterRun: RulerCheck & {
    readonly servicesTimesMeanRuler: { readonly steady: number | null; readonly import: number | null };
  };
  readonly machine: {
    readonly cpus: number;
    readonly node: string;
    readonly loadAverageBefore: readonly number[];
    readonly loadAverageAfter: readonly number[];
    /** What `--node-option` gave every service's `node` (none: as deployed). */
    readonly serviceNodeOptions: readonly string[];
    /** With `--profile`: how often each service's main thread was sampled. */
    readonly serviceProfileIntervalMs?: number;
  };
  readonly fleet: {
    readonly nodes: number;
    readonly seed: number;
    /** Nodes with a bundle (status ok): those the relay must serve. */
    readonly nodesWithBundle: number;
    readonly failedNodes: number;
  };
  readonly generators: number;
  readonly namespace: string;
  readonly import: {
    readonly revision: number;
    readonly commitMs: number;
    /** From the import's request to the relay's confirmation of 99% / 100% of the nodes. */
    readonly secondsTo99: number;
    readonly secondsTo100: number;
    readonly nodesPerSecond: number;
    /** Nodes whose confirmed bundle hash differs from the engine's. */
    readonly hashMismatches: number;
  };
  readonly steady: {
    readonly rate: number;
    readonly seconds: number;
    readonly changeSets: number;
    readonly committed: number;
    readonly failedCommits: number;
    readonly byKind: Readonly<Record<ChangeKind, number>>;
    readonly reachRanges: {
      readonly directive: { readonly min: number; readonly max: number; readonly candidates: number };
      readonly group: { readonly min: number; readonly max: number; readonly candidates: number };
    };
    /** Node bundles the change sets changed, summed over the change sets. */
    readonly nodeChanges: number;
    /** Committed change sets that changed no bundle (not in the lag figures). */
    readonly withoutBundleChange: number;
    /** The change's HTTP round trip to the config-service. */
    readonly commitMs: Distribution;
    /** Per change set, from its commit to its last changed node: generated, written to the feed, on the relay. */
    readonly generatedLagMs: Distribution;
    readonly distributedLagMs: Distribution;
    readonly lagMs: Distribution;
    /** Change sets not yet wholly on the relay when the last commit was answered. */
    readonly backlogAtStop: number;
    /** From the last commit's answer to the last change set wholly on the relay (0: none was behind). */
    readonly drainedSeconds: number;
    /** Did the change sets commit in the order they were sent? */
    readonly committedInOrder: boolean;
    /** Commits answered per second, from the first request to the last answer: below the rate, the config API fell behind. */
    readonly committedPerSecond: number;
  };
  readonly verification: {
    /** Nodes whose latest confirmed bundle on the relay was compared with the engine's final hash. */
    readonly nodesCompared: number;
    readonly mismatches: number;
    /** Nodes whose bundle was fetched from each relay's HTTP API (ETag) and compared. */
    readonly httpChecked: number;
    readonly httpMismatches: number;
  };
  readonly freshRelay: {
    readonly nodes: number;
    readonly seconds: number;
    readonly requests: number;
    /** `parent-requests-metric`, or an estimate from the blob fetches and feed pages when that metric is missing. */
    readonly requestsSource: string;
    readonly blobFetches: number | null;
  };
  /**
   * CPU per unit of work: steady (the steady and drain phases) per node change, import per node
   * with a bundle. The services are the config-service, the generators and the distribution-service
   * (relay root's nodes are served from its feed): not this process, nor the fresh relay (it works
   * in its own phase only).
   */
  readonly perNode: {
    readonly nodeChanges: number;
    readonly nodesWithBundle: number;
    readonly steadyPhases: readonly string[];
    readonly services: PerNodeCost & { readonly names: readonly string[] };
    readonly configServiceSteadyTimesEngine: number | null;
  };
  /** The pipeline's processes and this one (the benchmark's own). */
  readonly processes: readonly ProcessReport[];
  /** Kafka, Redis and Postgres's backends of our database, where local and visible; why not otherwise. */
  readonly infrastructure: {
    readonly processes: readonly ProcessReport[];
    readonly notSampled: readonly string[];
  };
  /** Peak RSS of each process, by name. */
  readonly peakRssMiB: Readonly<Record<string, number>>;
  /**
   * The load before the measured one (`--warm-up`), not in the steady figures: its change sets,
   * their lag, and the services' CPU per node change while V8 compiled their code for it.
   */
  readonly warmUp?: {
    readonly seconds: number;
    readonly changeSets: number;
    readonly committed: number;
    readonly nodeChanges: number;
    readonly lagMs: Distribution;
    readonly services: PerNodeCost;
  };
  /** With several generators: each one's figures. */
  readonly scaleOut?: { readonly generators: readonly ScaleOutGenerator[] };
}

/** With `--compare-generator`: which build each generator ran (nothing when they all ran one). */
function bundlesCompared(generators: readonly ScaleOutGenerator[]): string[] {
  if (new Set(generators.map((generator) => generator.bundle)).size < 2) return [];
  return [
    'builds compared under the same load:',
    ...generators.map((generator) => `  ${generator.name}: ${generator.bundle}`),
  ];
}

function ms(value: number | null): string {
  if (value === null) return '-';
  return value >= 100 ? value.toFixed(0) : value.toFixed(1);
}

function table(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((title, index) =>
    Math.max(title.length, ...rows.map((row) => (row[index] ?? '').length)),
  );
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, index) =>
        index === 0 ? cell.padEnd(widths[index] ?? 0) : cell.padStart(widths[index] ?? 0),
      )
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)];
}

function perUnit(value: number | null): string {
  return value === null ? '-' : value.toFixed(3);
}

function times(value: number | null): string {
  return value === null ? '-' : `${value.toFixed(2)}x`;
}

function signed(value: number): string {
  return value >= 0 ? `+${value}` : String(value);
}

/** Each process's CPU per node change and per node, and as multiples of the yardstick, the services apart. */
export function formatPerNodeTable(report: PipelineReport): string[] {
  const row = (name: string, cost: PerNodeCost): string[] => [
    name,
    perUnit(cost.cpuMsPerNodeChange),
    times(cost.steadyTimesEngine),
    perUnit(cost.cpuMsPerNode),
    times(cost.importTimesEngine),
  ];
  const services = report.processes.filter((process) => process.role === 'service');
  const apart = report.processes.filter((process) => process.role !== 'service');
  const infrastructure = report.infrastructure.processes;
  const rows = [
    ...services.map((process) => row(process.name, process)),
    row('services (total)', report.perNode.services),
    ['apart (not in the total):', '', '', '', ''],
    ...apart.map((process) =>
      row(`  ${process.name}${process.role === 'fresh relay' ? ' (fresh-relay phase only)' : ''}`, process),
    ),
    ...(infrastructure.length > 0 ? [['infrastructure:', '', '', '', '']] : []),
    ...infrastructure.map((process) => row(`  ${process.name}`, process)),
  ];
  const { yardstick, rulerAfterRun: after } = report;
  return [
    `yardstick: ${yardstick.engineMsPerNode.toFixed(3)} CPU ms per node (wall ${yardstick.engineWallMsPerNode.toFixed(3)} ms), ` +
      `${yardstick.nodesTimed} nodes after ${yardstick.warmUpNodes} warm-up`,
    `  ${yardstick.method}`,
    `  after the run, the services stopped: ${after.engineMsPerNode.toFixed(3)} CPU ms per node (${signed(after.driftPercent)}%); ` +
      `the services against the mean of both: steady ${times(after.servicesTimesMeanRuler.steady)}, import ${times(after.servicesTimesMeanRuler.import)}`,
    `  paced (not the ruler): ${yardstick.paced.engineMsPerNode.toFixed(3)} CPU ms per node, ${times(yardstick.paced.timesRuler)} ` +
      `the ruler, in ${yardstick.paced.slices} slices of ${yardstick.paced.nodesPerSlice} nodes ${yardstick.paced.pauseMs} ms apart ` +
      `(the generator's slice of a change, the outbox window): the same work, in bursts as the steady phase brings it`,
    `CPU ms per node change (${report.perNode.steadyPhases.join(' + ')}; ${report.perNode.nodeChanges} node changes) ` +
      `and per node (import; ${report.perNode.nodesWithBundle} nodes with a bundle); ` +
      `config-service steady ${times(report.perNode.configServiceSteadyTimesEngine)} the engine`,
    ...table(['process', 'steady ms/change', 'x engine', 'import ms/node', 'x engine'], rows),
    ...(report.infrastructure.notSampled.length > 0
      ? [`infrastructure not sampled: ${report.infrastructure.notSampled.join('; ')}`]
      : []),
  ];
}

/** The pipeline benchmark as plain-text tables: phases, lag distributions, processes. */
export function formatPipelineTable(report: PipelineReport): string {
  const { steady } = report;
  const load = (values: readonly number[]): string => values.map((value) => value.toFixed(2)).join(' ');
  const distributionRow = (name: string, distribution: PipelineReport['steady']['lagMs']): string[] => [
    name,
    String(distribution.count),
    ms(distribution.p50),
    ms(distribution.p95),
    ms(distribution.p99),
    ms(distribution.max),
  ];
  const phases = Object.keys(report.processes[0]?.cpuSecondsByPhase ?? {});
  const everyProcess = [...report.processes, ...report.infrastructure.processes];
  return [
    `fleet: ${report.fleet.nodes} nodes (${report.fleet.nodesWithBundle} with a bundle, ${report.fleet.failedNodes} failed), ` +
      `seed ${report.fleet.seed}; ${report.generators} generator(s); namespace ${report.namespace}`,
    `machine: ${report.machine.cpus} CPUs, node ${report.machine.node}, load average before ${load(report.machine.loadAverageBefore)}, ` +
      `after ${load(report.machine.loadAverageAfter)}` +
      (report.machine.serviceProfileIntervalMs === undefined
        ? ''
        : `; services profiled every ${report.machine.serviceProfileIntervalMs} ms`) +
      (report.machine.serviceNodeOptions.length === 0
        ? ''
        : `; every service's node ran with ${report.machine.serviceNodeOptions.join(' ')}`),
    '',
    `import: 99% on relay root in ${report.import.secondsTo99.toFixed(1)} s, 100% in ${report.import.secondsTo100.toFixed(1)} s ` +
      `(${report.import.nodesPerSecond.toFixed(0)} nodes/s; commit ${ms(report.import.commitMs)} ms; ${report.import.hashMismatches} hash mismatches)`,
    ...(report.warmUp
      ? [
          `warm-up (not measured): ${steady.rate} change sets/s for ${report.warmUp.seconds} s: ${report.warmUp.committed} committed, ` +
            `${report.warmUp.nodeChanges} node changes, lag p99 ${ms(report.warmUp.lagMs.p99)} ms; ` +
            `services ${perUnit(report.warmUp.services.cpuMsPerNodeChange)} CPU ms per node change (${times(report.warmUp.services.steadyTimesEngine)} the engine)`,
        ]
      : []),
    `steady: ${steady.rate} change sets/s for ${steady.seconds} s: ${steady.committed} committed (${steady.failedCommits} failed), ` +
      `${steady.byKind['node-property']} node / ${steady.byKind['directive-parameter']} directive / ${steady.byKind['group-property']} group, ` +
      `${steady.nodeChanges} node changes, ${steady.committedPerSecond} commits/s answered; backlog at stop ${steady.backlogAtStop}, drained ${steady.drainedSeconds.toFixed(1)} s after`,
    '',
    ...table(
      ['per change set (ms)', 'count', 'p50', 'p95', 'p99', 'max'],
      [
        distributionRow('commit (HTTP)', steady.commitMs),
        distributionRow('commit -> generated', steady.generatedLagMs),
        distributionRow('commit -> distributed', steady.distributedLagMs),
        distributionRow('commit -> on relay', steady.lagMs),
      ],
    ),
    '',
    `fresh relay: ${report.freshRelay.nodes} nodes in ${report.freshRelay.seconds.toFixed(1)} s, ` +
      `${report.freshRelay.requests} requests to its parent (${report.freshRelay.requestsSource})`,
    `verification: ${report.verification.nodesCompared} confirmed bundles compared with the engine (${report.verification.mismatches} mismatches), ` +
      `${report.verification.httpChecked} served bundles over HTTP (${report.verification.httpMismatches} mismatches)`,
    '',
    ...table(
      ['process', 'CPU s', ...phases.map((phase) => `CPU s ${phase}`)],
      everyProcess.map((process) => [
        process.name,
        process.cpuSeconds.toFixed(1),
        ...phases.map((phase) => (process.cpuSecondsByPhase[phase] ?? 0).toFixed(1)),
      ]),
    ),
    '',
    ...table(
      ['process', 'peak RSS MiB', ...phases.map((phase) => `MiB ${phase}`)],
      everyProcess.map((process) => [
        process.name,
        String(process.peakRssMiB),
        ...phases.map((phase) => {
          const peak = process.peakRssMiBByPhase[phase];
          return peak === undefined ? '-' : String(peak);
        }),
      ]),
    ),
    '',
    ...table(
      ['CPU s off the main thread', ...phases],
      report.processes
        .filter((process) => process.role === 'service')
        .map((process) => [
          process.name,
          ...phases.map((phase) => {
            const helper = process.helperThreadsCpuSecondsByPhase[phase] ?? 0;
            const all = process.cpuSecondsByPhase[phase] ?? 0;
            return all > 0 ? `${helper.toFixed(1)} (${Math.round((helper / all) * 100)}%)` : '0.0';
          }),
        ]),
    ),
    "(V8's compiler and collector helpers, libuv's pool: not in a --cpu-prof profile, which samples the main thread)",
    '',
    ...table(
      ['main-thread wake-ups', ...phases, 'per node change (steady + drain)'],
      report.processes.map((process) => [
        process.name,
        ...phases.map((phase) => String(process.wakeUpsByPhase[phase] ?? 0)),
        process.steadyWakeUpsPerNodeChange === null ? '-' : process.steadyWakeUpsPerNodeChange.toFixed(2),
      ]),
    ),
    '',
    ...table(
      ['KiB read / written / to disk', 'per node change (steady + drain)', 'per node (import)'],
      [...report.processes, ...report.infrastructure.processes]
        .filter((process) => process.steadyKiBPerNodeChange !== null || process.importKiBPerNode !== null)
        .map((process) => [
          process.name,
          kibCell(process.steadyKiBPerNodeChange),
          kibCell(process.importKiBPerNode),
        ]),
    ),
    '(bytes through read and write calls: sockets, pipes and files; to disk: what reached storage)',
    '',
    ...formatPerNodeTable(report),
    ...(report.scaleOut
      ? [
          '',
          `scale-out: ${report.scaleOut.generators.length} generators, each's share ` +
            `(a lone generator's figures need a run of its own)`,
          ...table(
            ['generator', 'steady ms/change', 'x engine', 'import ms/node', 'x engine', 'peak RSS MiB'],
            report.scaleOut.generators.map((generator) => [
              generator.name,
              perUnit(generator.cpuMsPerNodeChange),
              times(generator.steadyTimesEngine),
              perUnit(generator.cpuMsPerNode),
              times(generator.importTimesEngine),
              String(generator.peakRssMiB),
            ]),
          ),
          ...bundlesCompared(report.scaleOut.generators),
        ]
      : []),
  ].join('\n');
}
