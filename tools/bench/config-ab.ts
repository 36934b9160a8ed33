// Two builds of the config-service side by side on the same Kafka and Postgres, each with the same
// fleet imported; the same change sets are committed to one, then to the other, in alternating
// blocks at the pipeline benchmark's pace, and each block's CPU per commit is read from /proc. The
// config-service's cost is per commit (HTTP, validation, the store, the outbox), so two builds are
// compared in one run, minutes apart at most, rather than across pipeline benchmarks whose other
// processes and the machine's drift move it by more than most changes do.
// With `--against .` and `--node-option-against <flag>`, one build against itself under a node flag.
// Usage: `npm run bench:config -- --against <tree> [--node-option-against <flag>]... [--nodes N]
// [--rounds N] [--block N] [--rate N]`.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GenerationEngine, validateFleet } from '@policygen/engine';
import { buildBenchFleet } from '@policygen/fleets';
import { startTestInfrastructure } from '@policygen/testing-infra';
import type { TestInfrastructure } from '@policygen/testing-infra';
import { planSteadyChanges } from '../../apps/cli/src/bench/pipeline/change-plan';
import { distributionOf } from '../../apps/cli/src/bench/pipeline/distribution-stats';
import { postJson } from '../../apps/cli/src/bench/pipeline/pipeline-bench';
import { cpuSecondsOfProcess, findProcessInGroup } from '../../apps/cli/src/bench/pipeline/process-sampler';
import type { RunningService } from '../../apps/cli/src/bench/pipeline/services';
import { bundlePath, freshNamespace, ServiceLauncher } from '../../apps/cli/src/bench/pipeline/services';

export interface ConfigAbOptions {
  /** A checkout built with `npm run build` whose config-service is compared with this tree's. */
  readonly against: string;
  /** Options for the other build's `node` only, e.g. a V8 flag tried on this tree against itself. */
  readonly nodeOptionsAgainst?: readonly string[];
  readonly nodes: number;
  /** Blocks each build gets, in alternating order (ABBA…), after the warm-up. */
  readonly rounds: number;
  readonly block: number;
  /** Commits a second (the pipeline benchmark's default: 20). */
  readonly rate: number;
  /** Commits each build takes before its blocks are timed: the JIT's and the caches' warm-up (default 400). */
  readonly warmUp?: number;
  /** Kafka and Postgres to run on (default: started as for the tests, and stopped after). */
  readonly infrastructure?: TestInfrastructure;
}

export interface ConfigAbReport {
  readonly options: Omit<ConfigAbOptions, 'infrastructure'>;
  /** CPU ms per commit in each block: this tree's, then the other build's. */
  readonly here: readonly number[];
  readonly against: readonly number[];
  readonly medianHere: number;
  readonly medianAgainst: number;
  /** The revision each build reached (this tree's, the other's): 1 for the import, then one a commit. */
  readonly revisions: readonly [number, number];
}

interface Contender {
  readonly service: RunningService;
  readonly launcher: ServiceLauncher;
  readonly pid: number;
}

async function revisionOf({ service, launcher }: Contender): Promise<number> {
  const response = await fetch(`${service.url}/api/v1/revision`, {
    headers: { authorization: `Bearer ${launcher.adminToken}` },
  });
  return ((await response.json()) as { revision: number }).revision;
}

/** Commits each build takes before its blocks are timed, by default. */
const WARM_UP = 400;

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function median(values: readonly number[]): number {
  return distributionOf(values).p50 ?? Number.NaN;
}

export async function runConfigAb(options: ConfigAbOptions): Promise<ConfigAbReport> {
  const running = options.infrastructure ? undefined : await startTestInfrastructure();
  const infrastructure =
    options.infrastructure ?? (running as { infrastructure: TestInfrastructure }).infrastructure;
  const warmUp = options.warmUp ?? WARM_UP;
  const contenders: Contender[] = [];
  try {
    const bench = buildBenchFleet({ nodes: options.nodes, seed: 1 });
    const validation = validateFleet(bench.fleet);
    if (!validation.ok) throw new Error('the synthetic fleet is not valid');
    const plan = planSteadyChanges(GenerationEngine.fromFleet(validation.fleet).compiled, bench.landmarks, {
      count: warmUp + options.rounds * options.block,
      seed: 1,
    });
    const builds = [
      { bundleFile: bundlePath('config-service'), nodeOptions: [] },
      {
        bundleFile: join(options.against, 'dist/config-service/main.js'),
        nodeOptions: options.nodeOptionsAgainst ?? [],
      },
    ];
    for (const { bundleFile, nodeOptions } of builds) {
      const launcher = new ServiceLauncher(
        infrastructure,
        freshNamespace(),
        mkdtempSync(join(tmpdir(), 'policygen-config-ab-')),
        undefined,
        nodeOptions,
      );
      const service = await launcher.startConfigService(bundleFile);
      const pid = findProcessInGroup(service.process.processGroup, process.execPath, bundleFile);
      if (pid === undefined) throw new Error(`no process runs ${bundleFile}`);
      contenders.push({ service, launcher, pid });
      await postJson(`${service.url}/api/v1/import`, bench.fleet, launcher.adminToken);
    }
    const commit = async (
      { service, launcher, pid }: Contender,
      from: number,
      count: number,
    ): Promise<number> => {
      const before = cpuSecondsOfProcess(pid);
      for (let index = from; index < from + count; index++) {
        const started = Date.now();
        const change = plan.changes[index];
        if (!change) throw new Error(`no change set ${index}`);
        await postJson(`${service.url}/api/v1/changes`, change.changeSet, launcher.adminToken);
        await pause(1000 / options.rate - (Date.now() - started));
      }
      // The outbox's send and the commit's log lines come just after the answer.
      await pause(300);
      return ((cpuSecondsOfProcess(pid) - before) * 1000) / count;
    };
    for (const contender of contenders) await commit(contender, 0, warmUp);
    const perBlock: number[][] = [[], []];
    for (let round = 0; round < options.rounds; round++) {
      const from = warmUp + round * options.block;
      const order = round % 2 === 0 ? [0, 1] : [1, 0];
      for (const which of order) {
        const contender = contenders[which] as Contender;
        (perBlock[which] as number[]).push(await commit(contender, from, options.block));
      }
    }
    const [here, against] = perBlock as [number[], number[]];
    const revisions = (await Promise.all(contenders.map(revisionOf))) as [number, number];
    const { infrastructure: _given, ...shown } = options;
    return {
      options: shown,
      here,
      against,
      medianHere: median(here),
      medianAgainst: median(against),
      revisions,
    };
  } finally {
    await Promise.allSettled(contenders.map(({ service }) => service.process.stop()));
    await running?.stop();
  }
}

export function formatConfigAb(report: ConfigAbReport): string {
  const { options, here, against } = report;
  const row = (name: string, values: readonly number[], middle: number): string =>
    `${name.padEnd(12)} ${values.map((value) => value.toFixed(2).padStart(6)).join(' ')}   median ${middle.toFixed(2)}`;
  return [
    `config-service CPU ms per commit, ${options.nodes} nodes, blocks of ${options.block} commits at ${options.rate}/s after ${options.warmUp ?? WARM_UP} each:`,
    row('this tree', here, report.medianHere),
    row([options.against, ...(options.nodeOptionsAgainst ?? [])].join(' '), against, report.medianAgainst),
    `this tree / other: ${(report.medianHere / report.medianAgainst).toFixed(2)}`,
  ].join('\n');
}
