import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Pool } from 'pg';
import { createClient } from 'redis';
import { GenerationEngine, validateFleet } from '@policygen/engine';
import type { Fleet } from '@policygen/engine';
import { topicsFor } from '@policygen/events';
import type { TopicNames } from '@policygen/events';
import { buildBenchFleet } from '@policygen/fleets';
import type { BenchLandmarks } from '@policygen/fleets';
import type { Messaging } from '@policygen/messaging';
import { createKafkaMessaging } from '@policygen/messaging';
import type { TestInfrastructure } from '@policygen/testing-infra';
import type { ChangeKind, PlannedChange, SteadyPlan } from './change-plan';
import { planSteadyChanges } from './change-plan';
import { ConfirmationLog } from './confirmations';
import { distributionOf } from './distribution-stats';
import { InfrastructureWatch } from './infrastructure-watch';
import type { ProcessRole } from './per-node';
import { importCpuSeconds, ioPerNode, perNodeCost, steadyTotal, timesMeanRuler } from './per-node';
import type { IoBytes } from './process-sampler';
import { findProcessInGroup, ProcessSampler } from './process-sampler';
import type { PipelineReport, ProcessReport } from './report';
import { scaleOutOf } from './report';
import type { BenchNamespace, RunningService } from './services';
import { freshNamespace, generatorHeapMiB, PROFILE_INTERVAL_MS, ServiceLauncher } from './services';
import type { Yardstick, YardstickOptions } from './yardstick';
import { checkRuler, measureYardstick } from './yardstick';

export interface PipelineBenchOptions {
  readonly nodes: number;
  readonly seed: number;
  /** Change sets per second of the steady load, and for how long. */
  readonly rate: number;
  readonly seconds: number;
  /**
   * Seconds of the same load before the measured one (default 0), in a phase of their own: the
   * services' code for small change sets is compiled by V8 while it runs (the import's is another),
   * as the yardstick's engine is warmed up before it is timed.
   */
  readonly warmUpSeconds?: number;
  readonly generators: number;
  /**
   * The last generator runs this script instead of this tree's (another build's
   * `dist/generator-service/main.js`): two builds' generators under the same load in one run, which
   * a machine whose speed moves by a quarter between runs cannot give from two runs.
   */
  readonly compareGeneratorBundle?: string;
  readonly infrastructure: TestInfrastructure;
  readonly progress?: PipelineProgress;
  /** Stops the run (Ctrl-C): everything started is stopped and cleaned before it rejects. */
  readonly signal?: AbortSignal;
  /** Nodes whose served bundle is fetched from each relay over HTTP (default 300; all when fewer). */
  readonly httpChecks?: number;
  /** The longest wait of a phase (import, drain, fresh relay); default 2 min + 60 ms per node. */
  readonly phaseTimeoutMs?: number;
  /** Each service process writes a V8 CPU profile into DIR/<its name> (`--cpu-prof`). */
  readonly profileDir?: string;
  /** Options given to every service's `node`, reported with the machine. */
  readonly nodeOptions?: readonly string[];
  /** The engine yardstick's warm-up and timed nodes (default 500 and 2,000). */
  readonly yardstick?: YardstickOptions;
}

/** How the run tells where it is: a phase with a total, progress within it, and remarks. */
export interface PipelineProgress {
  phase(title: string, total: number): void;
  update(done: number): void;
  log(message: string): void;
  end(): void;
}

const SILENT: PipelineProgress = {
  phase: () => undefined,
  update: () => undefined,
  log: () => undefined,
  end: () => undefined,
};
const ROOT = 'root';
const WARM_UP_PHASE = 'warm-up';
const PARTITIONS = 12;
/** This process: the load's HTTP client, the confirmations' consumer and the in-process engine. */
const BENCH_PROCESS = 'bench (this process)';

interface CommitRecord {
  readonly change: PlannedChange;
  readonly ok: boolean;
  readonly error?: string;
  readonly revision: number;
  readonly committedAt: number;
  readonly sentAt: number;
  readonly answeredAt: number;
  readonly commitMs: number;
}

/** A committed change set and the nodes whose bundles it changes. */
interface TrackedChange {
  readonly record: CommitRecord;
  readonly nodes: readonly string[];
}

/** When a change set's last node was generated, distributed and on the relay (ms after its commit; `onRelay` an instant). */
interface Stage {
  readonly generated: number;
  readonly distributed: number;
  readonly onRelay: number;
  readonly lag: number;
}

class PipelineFailure extends Error {}

/** The config API, as the benchmark's admin. */
interface ConfigApi {
  readonly url: string;
  readonly token: string;
}

/**
 * The real pipeline under load: config-service, generator(s) and distribution-service (which serves
 * relay `root`'s nodes) as processes on real Kafka, Redis and Postgres, in a namespace of their
 * own. Imports the synthetic fleet, runs a steady load of change sets, then syncs a fresh relay,
 * and checks every bundle the root confirms against the engine run in this process on the same changes.
 */
export async function runPipelineBench(options: PipelineBenchOptions): Promise<PipelineReport> {
  const progress = options.progress ?? SILENT;
  const loadAverageBefore = loadavg();
  const phaseTimeoutMs = options.phaseTimeoutMs ?? 120_000 + 60 * options.nodes;

  progress.log(
    `building the synthetic fleet (${options.nodes} nodes, seed ${options.seed}) and generating it in-process`,
  );
  const bench = buildBenchFleet({ nodes: options.nodes, seed: options.seed });
  const validation = validateFleet(bench.fleet);
  if (!validation.ok)
    throw new Error(
      `the synthetic fleet is invalid: ${validation.issues
        .slice(0, 3)
        .map((issue) => `${issue.path}: ${issue.message}`)
        .join('; ')}`,
    );
  progress.log('timing the engine yardstick (a fresh engine materialising nodes single-threaded)');
  const yardstick = measureYardstick(validation.fleet, options.yardstick);
  progress.log(
    `yardstick: ${yardstick.engineMsPerNode.toFixed(3)} CPU ms per node (${yardstick.nodesTimed} nodes after ${yardstick.warmUpNodes} warm-up)`,
  );
  const warmUpCount = Math.round(options.rate * (options.warmUpSeconds ?? 0));
  const steadyCount = Math.round(options.rate * options.seconds);
  progress.log(
    `planning ${warmUpCount > 0 ? `${warmUpCount} warm-up and ` : ''}${steadyCount} change sets and the bundles each changes`,
  );
  const { importHashes, failedNodes, plan, warmUpChanges, changedByWarmUp, changedByPlan, plannedHashes } =
    planRun(validation.fleet, bench.landmarks, {
      seed: options.seed,
      steadyCount,
      warmUpCount,
    });

  const namespace = freshNamespace();
  const workDir = mkdtempSync(join(tmpdir(), 'policygen-bench-'));
  const topics = topicsFor(namespace.topicNamespace);
  const messaging = createKafkaMessaging({ brokers: [...options.infrastructure.kafkaBrokers] });
  const launcher = new ServiceLauncher(
    options.infrastructure,
    namespace,
    workDir,
    options.profileDir,
    options.nodeOptions,
  );
  const sampler = new ProcessSampler();
  const infrastructureWatch = new InfrastructureWatch(options.infrastructure, sampler);
  const roles = new Map<string, ProcessRole>([[BENCH_PROCESS, 'bench']]);
  const confirmations = new ConfirmationLog(ROOT);
  const phases: Phase[] = [];
  let broken: Error | undefined;
  launcher.onUnexpectedExit((service) => {
    broken ??= new PipelineFailure(
      `${service.name} ${service.process.describeExit()}:\n${service.process.logTail()}`,
    );
  });
  const abort = (): void => {
    broken ??= new PipelineFailure('interrupted');
  };
  options.signal?.addEventListener('abort', abort);
  if (options.signal?.aborted) abort();

  const check = (): void => {
    if (broken) throw broken;
  };
  const waitFor = async (
    what: string | (() => string),
    condition: () => boolean | Promise<boolean>,
    timeoutMs = phaseTimeoutMs,
  ): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    while (!(await condition())) {
      check();
      if (Date.now() > deadline)
        throw new PipelineFailure(
          `timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${typeof what === 'string' ? what : what()}`,
        );
      await sleep(200);
    }
  };
  const watch = (service: RunningService, role: ProcessRole = 'service'): void => {
    roles.set(service.name, role);
    const pid = findProcessInGroup(service.process.processGroup, process.execPath, service.bundleFile);
    if (pid !== undefined) sampler.watch(service.name, pid);
    else
      progress.log(`${service.name}: its process was not found, so its CPU and memory are not in the report`);
  };
  const markPhase = async (name: string): Promise<void> => {
    await infrastructureWatch.refresh();
    phases.push({
      name,
      cpu: sampler.startPhase(name),
      helperCpu: sampler.helperThreadsCpuSeconds(),
      wakeUps: sampler.wakeUps(),
      io: sampler.ioBytes(),
    });
  };

  let succeeded = false;
  try {
    progress.log(`namespace ${namespace.topicNamespace}; logs in ${workDir}`);
    await createTopics(messaging, topics);
    await confirmations.start(messaging, topics);
    check();
    progress.log('starting the config-service, generator(s) and distribution-service (relay root)');
    const config = await launcher.startConfigService();
    watch(config);
    const generators: RunningService[] = [];
    for (let index = 1; index <= options.generators; index++) {
      const generator = await launcher.startGenerator(
        `g${index}`,
        config.url,
        generatorHeapMiB(options.nodes, options.generators),
        index === options.generators ? options.compareGeneratorBundle : undefined,
      );
      watch(generator);
      generators.push(generator);
    }
    const distribution = await launcher.startDistribution(config.url);
    watch(distribution);
    sampler.watch(BENCH_PROCESS, process.pid);
    await infrastructureWatch.start();
    for (const name of infrastructureWatch.watched) roles.set(name, 'infrastructure');
    for (const reason of infrastructureWatch.notWatched) progress.log(`not sampled: ${reason}`);
    sampler.start();
    await waitFor(
      'the generators to own their partitions',
      async () => {
        const statuses = await Promise.all(generators.map((generator) => health(generator.url)));
        return statuses.every((status) => status['ready'] === true && status['ownership'] !== 'none yet');
      },
      90_000,
    );
    await waitFor(
      'the distribution-service to be ready',
      async () => (await health(distribution.url))['ready'] === true,
      90_000,
    );
    check();

    // (a) the import
    await markPhase('import');
    const expected = [...importHashes.keys()];
    progress.phase('import: nodes on relay root', expected.length);
    const importStarted = Date.now();
    const importCommitStarted = performance.now();
    const imported = await postJson(`${config.url}/api/v1/import`, bench.fleet, launcher.adminToken);
    const importCommitMs = performance.now() - importCommitStarted;
    const importTracker = confirmations.trackImport(imported.revision, expected);
    await waitFor(`the import on relay root (${expected.length} nodes)`, () => {
      progress.update(importTracker.arrivedCount);
      return importTracker.missingCount === 0;
    });
    confirmations.untrack(importTracker);
    progress.end();
    const arrivals = [...importTracker.arrivals.values()].sort((a, b) => a - b);
    const at = (share: number): number =>
      ((arrivals[Math.max(0, Math.ceil(share * arrivals.length) - 1)] ?? importStarted) - importStarted) /
      1000;
    const importMismatches = expected.filter(
      (nodeId) => confirmations.firstAtOrAfter(nodeId, imported.revision)?.hash !== importHashes.get(nodeId),
    ).length;
    const secondsTo100 = at(1);

    const api = { url: config.url, token: launcher.adminToken };
    const trackedOf = (committed: readonly CommitRecord[], changed: readonly string[][]): TrackedChange[] =>
      committed
        .map((record) => ({ record, nodes: changed[record.change.index] ?? [] }))
        .filter((change) => change.nodes.length > 0);
    const whollyOnRelay = async (title: string, tracked: readonly TrackedChange[]): Promise<void> => {
      progress.phase(title, tracked.length);
      const tracker = confirmations.trackChangeSets(
        tracked.map(({ record, nodes }) => ({ revision: record.revision, nodes })),
      );
      await waitFor(
        () =>
          `every change set on relay root (${tracked.length}); still missing: ${describeMissing(tracked, confirmations)}`,
        () => {
          progress.update(tracker.completeCount);
          return tracker.completeCount === tracked.length;
        },
      );
      confirmations.untrack(tracker);
      progress.end();
    };

    // (b) the warm-up: the same load, until wholly on the relay, not measured
    let warmUpRecords: CommitRecord[] = [];
    let warmUpAnswered: CommitRecord[] = [];
    let warmUpTracked: TrackedChange[] = [];
    if (warmUpChanges.length > 0) {
      await markPhase(WARM_UP_PHASE);
      warmUpRecords = await steadyLoad(api, warmUpChanges, options, progress, check, 'warm-up load');
      warmUpAnswered = warmUpRecords.filter((record) => record.ok);
      warmUpTracked = trackedOf(warmUpAnswered, changedByWarmUp);
      await whollyOnRelay('warm-up: change sets wholly on relay root', warmUpTracked);
    }

    // (c) the steady load
    await markPhase('steady');
    const records = await steadyLoad(api, plan.changes, options, progress, check, 'steady load');
    const answered = records.filter((record) => record.ok);
    const loadStoppedAt = Math.max(...records.map((record) => record.answeredAt));
    const loadStartedAt = Math.min(...records.map((record) => record.sentAt));
    const tracked = trackedOf(answered, changedByPlan);
    const everyAnswered = [...warmUpAnswered, ...answered];
    const committedInOrder = everyAnswered.every(
      (record, index) => index === 0 || record.revision > (everyAnswered[index - 1] as CommitRecord).revision,
    );

    await markPhase('drain');
    await whollyOnRelay('drain: change sets wholly on relay root', tracked);
    await markPhase('verification');
    const stagesOf = (changes: readonly TrackedChange[]): Stage[] =>
      changes.map(({ record, nodes }) => {
        let generated = 0;
        let distributed = 0;
        let confirmed = 0;
        for (const nodeId of nodes) {
          const confirmation = confirmations.firstAtOrAfter(nodeId, record.revision);
          if (!confirmation) continue;
          generated = Math.max(generated, confirmation.generatedAt);
          distributed = Math.max(distributed, confirmation.distributedAt);
          confirmed = Math.max(confirmed, confirmation.confirmedAt);
        }
        return {
          generated: generated - record.committedAt,
          distributed: distributed - record.committedAt,
          onRelay: confirmed,
          lag: confirmed - record.committedAt,
        };
      });
    const stages = stagesOf(tracked);
    const lastOnRelay = Math.max(loadStoppedAt, ...stages.map((stage) => stage.onRelay));

    // What the relay must serve now: the engine's results after the change sets, in their commit order.
    progress.log('checking the bundles relay root confirmed against the engine');
    const everyOneAnswered = everyAnswered.length === warmUpChanges.length + plan.changes.length;
    const finalHashes =
      committedInOrder && everyOneAnswered
        ? plannedHashes
        : hashesOf(replay(validation.fleet, everyAnswered));
    const mismatches = [...finalHashes].filter(
      ([nodeId, hash]) => confirmations.latest(nodeId)?.hash !== hash,
    ).length;
    const sample = sampleOf([...finalHashes.keys()], options.httpChecks ?? 300);
    const tokens = await nodeTokens({ url: config.url, token: launcher.adminToken }, sample);
    let httpMismatches = await servedMismatches(distribution.url, sample, tokens, finalHashes);

    // (c) a fresh relay's full sync
    await markPhase('fresh relay');
    const head = Number((await health(distribution.url))['cursor']);
    progress.phase('fresh relay: nodes served', finalHashes.size);
    const freshStarted = Date.now();
    const fresh = await launcher.startRelay('relay fresh', ROOT, distribution.url);
    watch(fresh, 'fresh relay');
    await waitFor(`the fresh relay to serve ${finalHashes.size} nodes`, async () => {
      const status = await health(fresh.url);
      progress.update(Number(status['nodes'] ?? 0));
      return Number(status['nodes']) >= finalHashes.size && Number(status['cursor']) >= head;
    });
    const freshSeconds = (Date.now() - freshStarted) / 1000;
    progress.end();
    const requests = parentRequests(
      await (await idempotentFetch(`${fresh.url}/metrics`)).text(),
      finalHashes.size,
    );
    httpMismatches += await servedMismatches(fresh.url, sample, tokens, finalHashes);
    await markPhase('end');
    // The ruler again, as quiet as before the services started: how far the machine moved meanwhile.
    await launcher.stopAll();
    progress.log('timing the engine yardstick again, the services stopped');
    const rulerCheck = checkRuler(validation.fleet, yardstick, options.yardstick);
    progress.log(
      `yardstick after the run: ${rulerCheck.engineMsPerNode.toFixed(3)} CPU ms per node (${rulerCheck.driftPercent}% from before)`,
    );

    const nodeChanges = tracked.reduce((sum, change) => sum + change.nodes.length, 0);
    const work = { nodeChanges, nodes: importHashes.size };
    const processes = processReports(sampler, phases, roles, work, yardstick);
    const services = processes.filter((process) => process.role === 'service');
    const serviceCost = perNodeCost(
      {
        steadySeconds: services.reduce((sum, process) => sum + steadyTotal(process.cpuSecondsByPhase), 0),
        importSeconds: services.reduce(
          (sum, process) => sum + importCpuSeconds(process.cpuSecondsByPhase),
          0,
        ),
      },
      work,
      yardstick.engineMsPerNode,
    );
    const generatorReports = processes.filter((process) => process.name.startsWith('generator '));
    const warmUpNodeChanges = warmUpTracked.reduce((sum, change) => sum + change.nodes.length, 0);
    const warmUp =
      warmUpChanges.length === 0
        ? {}
        : {
            warmUp: {
              seconds: options.warmUpSeconds ?? 0,
              changeSets: warmUpRecords.length,
              committed: warmUpAnswered.length,
              nodeChanges: warmUpNodeChanges,
              lagMs: distributionOf(stagesOf(warmUpTracked).map((stage) => stage.lag)),
              services: perNodeCost(
                {
                  steadySeconds: services.reduce(
                    (sum, process) => sum + (process.cpuSecondsByPhase[WARM_UP_PHASE] ?? 0),
                    0,
                  ),
                  importSeconds: 0,
                },
                { nodeChanges: warmUpNodeChanges, nodes: 0 },
                yardstick.engineMsPerNode,
              ),
            },
          };
    succeeded = true;
    const byKind: Record<ChangeKind, number> = {
      'node-property': 0,
      'directive-parameter': 0,
      'group-property': 0,
    };
    for (const record of answered) byKind[record.change.kind]++;
    return {
      machine: {
        cpus: availableParallelism(),
        node: process.version,
        loadAverageBefore,
        loadAverageAfter: loadavg(),
        serviceNodeOptions: [...(options.nodeOptions ?? [])],
        ...(options.profileDir === undefined ? {} : { serviceProfileIntervalMs: PROFILE_INTERVAL_MS }),
      },
      yardstick,
      rulerAfterRun: {
        ...rulerCheck,
        servicesTimesMeanRuler: timesMeanRuler(
          serviceCost,
          yardstick.engineMsPerNode,
          rulerCheck.engineMsPerNode,
        ),
      },
      fleet: { nodes: options.nodes, seed: options.seed, nodesWithBundle: importHashes.size, failedNodes },
      generators: options.generators,
      namespace: namespace.topicNamespace,
      import: {
        revision: imported.revision,
        commitMs: Math.round(importCommitMs),
        secondsTo99: at(0.99),
        secondsTo100,
        nodesPerSecond: secondsTo100 > 0 ? Math.round(expected.length / secondsTo100) : expected.length,
        hashMismatches: importMismatches,
      },
      steady: {
        rate: options.rate,
        seconds: options.seconds,
        changeSets: records.length,
        committed: answered.length,
        failedCommits: records.length - answered.length,
        byKind,
        reachRanges: {
          directive: { ...plan.directiveRange, candidates: plan.directives.length },
          group: { ...plan.groupRange, candidates: plan.groups.length },
        },
        nodeChanges,
        withoutBundleChange: answered.length - tracked.length,
        commitMs: distributionOf(answered.map((record) => record.commitMs)),
        generatedLagMs: distributionOf(stages.map((stage) => stage.generated)),
        distributedLagMs: distributionOf(stages.map((stage) => stage.distributed)),
        lagMs: distributionOf(stages.map((stage) => stage.lag)),
        backlogAtStop: stages.filter((stage) => stage.onRelay > loadStoppedAt).length,
        drainedSeconds: (lastOnRelay - loadStoppedAt) / 1000,
        committedInOrder,
        committedPerSecond:
          Math.round((answered.length / Math.max(0.001, (loadStoppedAt - loadStartedAt) / 1000)) * 10) / 10,
      },
      verification: {
        nodesCompared: finalHashes.size,
        mismatches,
        httpChecked: sample.length * 2,
        httpMismatches,
      },
      freshRelay: { nodes: finalHashes.size, seconds: freshSeconds, ...requests },
      perNode: {
        nodeChanges,
        nodesWithBundle: importHashes.size,
        steadyPhases: ['steady', 'drain'],
        services: { names: services.map((process) => process.name), ...serviceCost },
        configServiceSteadyTimesEngine:
          processes.find((process) => process.name === 'config-service')?.steadyTimesEngine ?? null,
      },
      processes: processes.filter((process) => process.role !== 'infrastructure'),
      infrastructure: {
        processes: processes.filter((process) => process.role === 'infrastructure'),
        notSampled: [...infrastructureWatch.notWatched],
      },
      peakRssMiB: Object.fromEntries(
        processes
          .filter((process) => process.role !== 'infrastructure')
          .map((process) => [process.name, process.peakRssMiB]),
      ),
      ...warmUp,
      ...scaleOutOf(
        generatorReports,
        new Map(generators.map((generator) => [generator.name, generator.bundleFile])),
      ),
    };
  } finally {
    options.signal?.removeEventListener('abort', abort);
    progress.end();
    sampler.stop();
    await infrastructureWatch.stop();
    await launcher.stopAll();
    await confirmations.stop().catch(() => undefined);
    await cleanUp(options.infrastructure, namespace, messaging).catch((error: unknown) =>
      progress.log(`cleaning namespace ${namespace.topicNamespace} failed: ${(error as Error).message}`),
    );
    if (succeeded) rmSync(workDir, { recursive: true, force: true });
    else progress.log(`the services' logs are kept in ${workDir}`);
  }
}

/** The change sets not wholly on the relay, and for each the nodes missing and what the relay confirmed of them. */
function describeMissing(
  tracked: readonly { readonly record: CommitRecord; readonly nodes: readonly string[] }[],
  confirmations: ConfirmationLog,
): string {
  return tracked
    .flatMap(({ record, nodes }) => {
      const missing = nodes.filter((nodeId) => !confirmations.firstAtOrAfter(nodeId, record.revision));
      if (missing.length === 0) return [];
      const latest = missing.slice(0, 3).map((nodeId) => {
        const confirmation = confirmations.latest(nodeId);
        return `${nodeId} (last confirmed at revision ${confirmation?.revision ?? 'none'})`;
      });
      return [
        `#${record.change.index} ${record.change.kind} of ${record.change.target} at revision ${record.revision}: ` +
          `${missing.length} of ${nodes.length} nodes, e.g. ${latest.join(', ')}`,
      ];
    })
    .slice(0, 5)
    .join('; ');
}

/** What a run sends and what the engine says of it, worked out before any service starts. */
interface RunPlan {
  /** The bundle hash of each node with a bundle after the import. */
  readonly importHashes: ReadonlyMap<string, string>;
  readonly failedNodes: number;
  readonly plan: SteadyPlan;
  readonly warmUpChanges: readonly PlannedChange[];
  /** The nodes whose bundle each change set changes, applied in the order they are sent. */
  readonly changedByWarmUp: readonly string[][];
  readonly changedByPlan: readonly string[][];
  /** Every node's hash after every change set, committed in the order planned. */
  readonly plannedHashes: ReadonlyMap<string, string>;
}

/**
 * The import's bundles and the change sets' effects, by an engine of the fleet that is let go
 * when it returns: at 100,000 nodes an engine holds about a GiB, and a second one is built only
 * should the change sets be committed in another order than sent (`replay`).
 */
function planRun(
  fleet: Fleet,
  landmarks: BenchLandmarks,
  counts: { readonly seed: number; readonly steadyCount: number; readonly warmUpCount: number },
): RunPlan {
  const engine = GenerationEngine.fromFleet(fleet);
  engine.regenerate();
  const importHashes = hashesOf(engine);
  const failedNodes = [...engine.allResults().values()].filter((result) => result.status === 'failed').length;
  // The measured change sets are those of a run without warm-up; the warm-up's, of the same mix,
  // come from a seed of their own and write values of their own, so that the measured ones change
  // the same nodes after them.
  const plan = planSteadyChanges(engine.compiled, landmarks, {
    count: counts.steadyCount,
    seed: counts.seed,
  });
  const warmUpChanges =
    counts.warmUpCount > 0
      ? planSteadyChanges(engine.compiled, landmarks, {
          count: counts.warmUpCount,
          seed: warmUpSeedOf(counts.seed),
        }).changes
      : [];
  // Applied in the order they are sent: the warm-up's first.
  const changedByWarmUp = warmUpChanges.map((change) => changedNodes(engine, change.changeSet));
  const changedByPlan = plan.changes.map((change) => changedNodes(engine, change.changeSet));
  return {
    importHashes,
    failedNodes,
    plan,
    warmUpChanges,
    changedByWarmUp,
    changedByPlan,
    plannedHashes: hashesOf(engine),
  };
}

/** The warm-up plan's seed: another than the measured plan's, whatever the run's seed. */
function warmUpSeedOf(seed: number): number {
  return seed + 1_000_003;
}

/** The nodes whose bundle (hash or status) a change set changes, applied to the engine in turn. */
function changedNodes(engine: GenerationEngine, changeSet: unknown): string[] {
  const outcome = engine.apply(changeSet);
  if (!outcome.ok)
    throw new Error(
      `a planned change set does not apply: ${outcome.issues
        .slice(0, 3)
        .map((issue) => `${issue.path}: ${issue.message}`)
        .join('; ')}`,
    );
  const changed = engine.regenerate().changed;
  const failed = changed.filter((nodeId) => engine.result(nodeId)?.status !== 'ok');
  if (failed.length > 0)
    throw new Error(
      `a planned change set makes ${failed.length} node(s) fail, e.g. ${failed[0]}: ` +
        JSON.stringify(engine.result(failed[0] as string)?.errors),
    );
  return [...changed];
}

function replay(fleet: Fleet, records: readonly CommitRecord[]): GenerationEngine {
  const engine = GenerationEngine.fromFleet(fleet);
  for (const record of [...records].sort((a, b) => a.revision - b.revision)) {
    const outcome = engine.apply(record.change.changeSet);
    if (!outcome.ok) throw new Error(`change set ${record.change.index} does not apply in commit order`);
  }
  engine.regenerate();
  return engine;
}

function hashesOf(engine: GenerationEngine): Map<string, string> {
  const hashes = new Map<string, string>();
  for (const [nodeId, result] of engine.allResults())
    if (result.status === 'ok' && result.hash) hashes.set(nodeId, result.hash);
  return hashes;
}

/** Sends the change sets at the rate, each on its own schedule whatever the answers' delay. */
async function steadyLoad(
  api: ConfigApi,
  changes: readonly PlannedChange[],
  options: PipelineBenchOptions,
  progress: PipelineProgress,
  check: () => void,
  title: string,
): Promise<CommitRecord[]> {
  progress.phase(
    `${title}: ${options.rate} change sets/s for ${Math.round(changes.length / options.rate)} s, committed`,
    changes.length,
  );
  const started = performance.now();
  let answered = 0;
  const pending: Promise<CommitRecord>[] = [];
  for (const [position, change] of changes.entries()) {
    check();
    const due = started + (position * 1000) / options.rate;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    pending.push(
      commit(api, change).then((record) => {
        progress.update(++answered);
        return record;
      }),
    );
  }
  const records = await Promise.all(pending);
  progress.end();
  return records;
}

async function commit(api: ConfigApi, change: PlannedChange): Promise<CommitRecord> {
  const sentAt = Date.now();
  const began = performance.now();
  try {
    const answer = await postJson(`${api.url}/api/v1/changes`, change.changeSet, api.token);
    const commitMs = performance.now() - began;
    return {
      change,
      ok: true,
      revision: answer.revision,
      committedAt: Date.parse(answer.committedAt),
      sentAt,
      answeredAt: Date.now(),
      commitMs,
    };
  } catch (error) {
    return {
      change,
      ok: false,
      error: (error as Error).message,
      revision: -1,
      committedAt: 0,
      sentAt,
      answeredAt: Date.now(),
      commitMs: performance.now() - began,
    };
  }
}

/** A POST of JSON with a bearer token; its answer parsed, or a `PipelineFailure` naming the status. */
export async function postJson(
  url: string,
  body: unknown,
  token: string,
): Promise<{ revision: number; committedAt: string }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new PipelineFailure(`POST ${url}: ${response.status} ${text.slice(0, 500)}`);
  return JSON.parse(text) as { revision: number; committedAt: string };
}

/**
 * `fetch` for requests that may be sent twice (reads, a node's token), sent once more when the
 * connection dropped before any answer: an idle keep-alive connection that the server closed while
 * this process was computing (the engine's replay of a large fleet) is reused at first.
 */
async function idempotentFetch(url: string, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
    return fetch(url, init);
  }
}

async function health(url: string): Promise<Record<string, unknown>> {
  try {
    const response = await idempotentFetch(`${url}/status`);
    return (await response.json()) as Record<string, unknown>;
  } catch {
    return {};
  }
}

/** Up to `count` of the nodes, spread evenly over them. */
function sampleOf(nodeIds: readonly string[], count: number): string[] {
  if (nodeIds.length <= count) return [...nodeIds];
  const step = nodeIds.length / count;
  return Array.from({ length: count }, (_, index) => nodeIds[Math.floor(index * step)] as string);
}

async function nodeTokens(api: ConfigApi, nodeIds: readonly string[]): Promise<Map<string, string>> {
  const tokens = new Map<string, string>();
  for (const nodeId of nodeIds) {
    const response = await idempotentFetch(`${api.url}/api/v1/nodes/${encodeURIComponent(nodeId)}/token`, {
      method: 'POST',
      headers: { authorization: `Bearer ${api.token}` },
    });
    if (!response.ok)
      throw new PipelineFailure(`no token for ${nodeId}: ${response.status} ${await response.text()}`);
    tokens.set(nodeId, ((await response.json()) as { token: string }).token);
  }
  return tokens;
}

/** Nodes whose bundle the relay serves (its ETag) differs from the expected hash. */
async function servedMismatches(
  relayUrl: string,
  nodeIds: readonly string[],
  tokens: ReadonlyMap<string, string>,
  expected: ReadonlyMap<string, string>,
): Promise<number> {
  let mismatches = 0;
  for (const nodeId of nodeIds) {
    const response = await idempotentFetch(`${relayUrl}/nodes/${encodeURIComponent(nodeId)}/policies`, {
      headers: { accept: 'application/json', authorization: `Bearer ${tokens.get(nodeId) ?? ''}` },
    });
    await response.arrayBuffer();
    if (!response.ok || response.headers.get('etag') !== `"${expected.get(nodeId) ?? ''}"`) mismatches++;
  }
  return mismatches;
}

/**
 * HTTP requests a relay made to its parent, from its /metrics: `policygen_relay_parent_requests_total`
 * summed over its kinds; a relay without that counter gives its blob fetches plus the feed pages a
 * sync of `nodes` entries takes at least (1,000 a page, and the last long-poll).
 */
export function parentRequests(
  metrics: string,
  nodes: number,
): { requests: number; requestsSource: string; blobFetches: number | null } {
  const sum = (name: string): number | null => {
    let total: number | null = null;
    for (const line of metrics.split('\n')) {
      if (!line.startsWith(name) || !/^[\w]+(\{[^}]*\})? /.test(line)) continue;
      if (
        line.slice(name.length, name.length + 1) !== ' ' &&
        line.slice(name.length, name.length + 1) !== '{'
      )
        continue;
      total = (total ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1));
    }
    return total;
  };
  const blobFetches = sum('policygen_relay_blob_fetches_total');
  const counted = sum('policygen_relay_parent_requests_total');
  if (counted !== null) return { requests: counted, requestsSource: 'parent-requests-metric', blobFetches };
  const feedPages = Math.ceil(nodes / 1_000) + 1;
  return {
    requests: (blobFetches ?? 0) + feedPages,
    requestsSource: `estimated: ${blobFetches ?? 0} blob fetches + ${feedPages} feed pages (no policygen_relay_parent_requests_total)`,
    blobFetches,
  };
}

/** A phase's start: each process's CPU seconds and main-thread wake-ups then. */
interface Phase {
  readonly name: string;
  readonly cpu: Map<string, number>;
  /** CPU seconds of threads other than the main one (see `ProcessSampler.helperThreadsCpuSeconds`). */
  readonly helperCpu: Map<string, number>;
  readonly wakeUps: Map<string, number>;
  /** Bytes each process had read and written (absent where its counters cannot be read). */
  readonly io: Map<string, IoBytes>;
}

const NO_BYTES: IoBytes = { read: 0, written: 0, disk: 0 };

function processReports(
  sampler: ProcessSampler,
  phases: readonly Phase[],
  roles: ReadonlyMap<string, ProcessRole>,
  work: { readonly nodeChanges: number; readonly nodes: number },
  yardstick: Yardstick,
): ProcessReport[] {
  return sampler.figures().map((figures) => {
    const byPhase: Record<string, number> = {};
    const exact: Record<string, number> = {};
    const rssByPhase: Record<string, number> = {};
    const wakeUpsByPhase: Record<string, number> = {};
    const helperByPhase: Record<string, number> = {};
    const ioByPhase: Record<string, IoBytes> = {};
    for (let index = 0; index + 1 < phases.length; index++) {
      const phase = phases[index] as Phase;
      const next = phases[index + 1] as Phase;
      // A process started within the phase had spent nothing at its start.
      const spent = Math.max(0, (next.cpu.get(figures.name) ?? 0) - (phase.cpu.get(figures.name) ?? 0));
      exact[phase.name] = spent;
      byPhase[phase.name] = Math.round(spent * 100) / 100;
      wakeUpsByPhase[phase.name] = Math.max(
        0,
        (next.wakeUps.get(figures.name) ?? 0) - (phase.wakeUps.get(figures.name) ?? 0),
      );
      const helper = (next.helperCpu.get(figures.name) ?? 0) - (phase.helperCpu.get(figures.name) ?? 0);
      helperByPhase[phase.name] = Math.round(Math.max(0, helper) * 100) / 100;
      const rss = figures.peakRssMiBByPhase[phase.name];
      if (rss !== undefined) rssByPhase[phase.name] = rss;
      const ioAfter = next.io.get(figures.name);
      // A process started within the phase had moved nothing at its start.
      const ioStart = phase.io.get(figures.name) ?? NO_BYTES;
      if (ioAfter)
        ioByPhase[phase.name] = {
          read: Math.max(0, ioAfter.read - ioStart.read),
          written: Math.max(0, ioAfter.written - ioStart.written),
          disk: Math.max(0, ioAfter.disk - ioStart.disk),
        };
    }
    return {
      name: figures.name,
      role: roles.get(figures.name) ?? 'service',
      peakRssMiB: figures.peakRssMiB,
      peakRssMiBByPhase: rssByPhase,
      cpuSeconds: figures.cpuSeconds,
      cpuSecondsByPhase: byPhase,
      helperThreadsCpuSecondsByPhase: helperByPhase,
      wakeUpsByPhase,
      steadyWakeUpsPerNodeChange:
        work.nodeChanges > 0
          ? Math.round((steadyTotal(wakeUpsByPhase) / work.nodeChanges) * 100) / 100
          : null,
      ioBytesByPhase: ioByPhase,
      ...ioPerNode(ioByPhase, work),
      ...perNodeCost(
        { steadySeconds: steadyTotal(exact), importSeconds: importCpuSeconds(exact) },
        work,
        yardstick.engineMsPerNode,
      ),
    };
  });
}

async function createTopics(messaging: Messaging, topics: TopicNames): Promise<void> {
  const admin = await messaging.createAdmin();
  try {
    await admin.createTopics([{ name: topics.distributionEvents, partitions: PARTITIONS }]);
  } finally {
    await admin.close();
  }
}

/** Drops what the run created: its schema, its Redis keys, its topics (consumer groups expire by themselves). */
async function cleanUp(
  infrastructure: TestInfrastructure,
  namespace: BenchNamespace,
  messaging: Messaging,
): Promise<void> {
  const pool = new Pool({ connectionString: infrastructure.databaseUrl });
  try {
    await pool.query(`drop schema if exists "${namespace.schema}" cascade`);
  } finally {
    await pool.end();
  }
  const redis = createClient({ url: infrastructure.redisUrl });
  await redis.connect();
  try {
    let batch: string[] = [];
    for await (const keys of redis.scanIterator({ MATCH: `${namespace.redisPrefix}*`, COUNT: 1_000 })) {
      batch.push(...keys);
      if (batch.length >= 1_000) {
        await redis.del(batch);
        batch = [];
      }
    }
    if (batch.length > 0) await redis.del(batch);
  } finally {
    await redis.close();
  }
  const admin = await messaging.createAdmin();
  try {
    const topics = (await admin.listTopics()).filter((topic) =>
      topic.startsWith(`${namespace.topicNamespace}.`),
    );
    if (topics.length > 0) await admin.deleteTopics(topics);
  } finally {
    await admin.close();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
