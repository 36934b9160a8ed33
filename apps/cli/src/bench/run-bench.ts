import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { GenerationEngine, validateFleet } from '@policygen/engine';
import type { ApplyOutcome, Fleet, Regeneration } from '@policygen/engine';
import { buildBenchFleet } from '@policygen/fleets';
import { GenerationPool, generateFleetInParallel, regenerateInParallel } from '@policygen/generation-pool';
import type { BenchFleetOptions, BenchLandmarks, FleetFile } from '@policygen/fleets';
import type { BenchScenario } from './scenarios';
import { FULL_SCENARIO, SCENARIOS } from './scenarios';

export interface BenchOptions {
  readonly nodes: number;
  readonly seed: number;
  /** Scenario names; empty: all. */
  readonly scenarios: readonly string[];
  /** Skip the naive (full regeneration) figure of each change scenario. */
  readonly skipNaive: boolean;
  /** Worker threads for the parallel full generation; 1: none. */
  readonly threads: number;
  readonly onProgress?: (message: string) => void;
}

export interface ScenarioResult {
  readonly scenario: string;
  readonly description: string;
  /** Change sets applied (one regeneration after them all). */
  readonly changeSets: number;
  /** Validation, index update and regeneration of the affected nodes; for `full`, index build and generation. */
  readonly engineMs: number;
  readonly applyMs: number;
  readonly regenerateMs: number;
  /** CPU time of every thread of the process during engineMs (the machine is shared). */
  readonly cpuMs: number;
  /** Nodes the dependency index named. */
  readonly affected: number;
  readonly recomputed: number;
  /** Bundles whose hash, status or errors changed. */
  readonly changed: number;
  /** Recomputed nodes whose bundle came out unchanged (the index's imprecision). */
  readonly recomputedUnchanged: number;
  /** A full regeneration of the changed fleet from scratch, as Rudder does for every change. */
  readonly naiveMs: number | null;
  readonly speedup: number | null;
  /** Peak resident set size of the process so far. */
  readonly peakRssMiB: number;
  readonly rssMiB: number;
  /** The machine's load average (1, 5, 15 minutes) when the scenario ended: other work shares the cores. */
  readonly loadAverage: readonly number[];
  /** Runs measured; the figures are the median run's. */
  readonly runs?: number;
  readonly slowestEngineMs?: number;
}

export interface BenchReport {
  readonly machine: { readonly cpus: number; readonly loadAverage: readonly number[]; readonly node: string };
  readonly fleet: {
    readonly nodes: number;
    readonly seed: number;
    readonly groups: number;
    readonly directives: number;
    readonly techniques: number;
    readonly rules: number;
    readonly relays: number;
    readonly buildMs: number;
    readonly validateMs: number;
    readonly policiesPerNode: number;
    readonly failedNodes: number;
    /** Distinct plans (rule sets), property levels (group sets) and rendered policies after full generation. */
    readonly caches: Readonly<Record<string, number>>;
  };
  readonly scenarios: readonly ScenarioResult[];
}

const MiB = 1024 * 1024;

export function scenarioNames(): string[] {
  return SCENARIOS.map((scenario) => scenario.name);
}

/** Runs the scenarios on one engine, in order, each on the configuration the previous ones left. */
export async function runBench(options: BenchOptions, machine: BenchReport['machine']): Promise<BenchReport> {
  const progress = options.onProgress ?? (() => undefined);
  const selected = selectScenarios(options.scenarios);
  const sizes: BenchFleetOptions & { nodes: number } = { nodes: options.nodes, seed: options.seed };

  progress(`building the synthetic fleet (${options.nodes} nodes, seed ${options.seed})`);
  let started = performance.now();
  const bench = buildBenchFleet(sizes);
  const buildMs = performance.now() - started;
  started = performance.now();
  const validation = validateFleet(bench.fleet);
  const validateMs = performance.now() - started;
  if (!validation.ok)
    throw new Error(
      `the bench fleet is invalid: ${validation.issues
        .slice(0, 3)
        .map((i) => `${i.path}: ${i.message}`)
        .join('; ')}`,
    );
  const fleet = validation.fleet;

  const context = { landmarks: bench.landmarks, sizes, initial: bench.fleet, skipNaive: options.skipNaive };
  const changeScenarios = selected.filter((scenario) => scenario.name !== FULL_SCENARIO);

  // The parallel path first, on a heap holding nothing else (a service runs one or the other): the
  // full generation, then every change scenario replayed on the pool (`regenerateInParallel`).
  let parallel: ParallelPhase | undefined;
  if (options.threads > 1 && selected.some((scenario) => scenario.name === FULL_SCENARIO)) {
    progress(`full generation on ${options.threads} worker threads`);
    parallel = await parallelPhase(fleet, options.threads, changeScenarios, context, progress);
  }

  progress('full generation');
  started = performance.now();
  const fullCpu = process.cpuUsage();
  const engine = GenerationEngine.fromFleet(fleet);
  const full = engine.regenerate();
  const fullMs = performance.now() - started;
  const fullCpuMs = cpuMsSince(fullCpu);
  const caches = engine.cacheStats();
  const results: ScenarioResult[] = [];
  let policies = 0;
  let failed = 0;
  for (const result of engine.allResults().values()) {
    policies += result.policies;
    if (result.status === 'failed') failed++;
  }
  if (selected.some((scenario) => scenario.name === FULL_SCENARIO)) {
    results.push(
      measured(SCENARIOS[0] as BenchScenario, 0, {
        applyMs: 0,
        regenerateMs: fullMs,
        cpuMs: fullCpuMs,
        affected: full.candidates,
        recomputed: full.recomputed,
        changed: full.changed.length,
        naiveMs: fullMs,
      }),
    );
  }
  const sameAsParallel = (scenario: string): void => {
    const hashes = parallel?.hashesAfter.get(scenario);
    if (hashes && !sameHashes(hashes, engine))
      throw new Error(
        `scenario ${scenario}: the parallel path's results differ from the single-threaded ones`,
      );
  };
  if (parallel) {
    results.push(withNaive(parallel.results[0] as ScenarioResult, fullMs));
    sameAsParallel(PARALLEL_FULL_SCENARIO);
  }

  const single: ScenarioTarget = {
    engine,
    apply: (changeSet) => Promise.resolve(engine.apply(changeSet)),
    regenerate: () => Promise.resolve(engine.regenerate()),
  };
  await runChangeScenarios(single, changeScenarios, context, progress, (scenario, result) => {
    results.push(result);
    sameAsParallel(scenario.name);
    const parallelResult = parallel?.results.find((entry) => entry.scenario === `${scenario.name}-parallel`);
    if (parallelResult) results.push(withNaive(parallelResult, result.naiveMs));
  });

  return {
    machine,
    fleet: {
      nodes: fleet.nodes.length,
      seed: options.seed,
      groups: fleet.groups.length,
      directives: fleet.directives.length,
      techniques: fleet.techniques.length,
      rules: fleet.rules.length,
      relays: fleet.relays.length,
      buildMs: round(buildMs),
      validateMs: round(validateMs),
      policiesPerNode: round(policies / Math.max(1, engine.allResults().size)),
      failedNodes: failed,
      caches,
    },
    scenarios: results,
  };
}

const PARALLEL_FULL_SCENARIO = 'full-parallel';

interface ScenarioTarget {
  readonly engine: GenerationEngine;
  readonly apply: (changeSet: unknown) => Promise<ApplyOutcome>;
  readonly regenerate: () => Promise<Regeneration>;
}

interface ScenarioRunContext {
  readonly landmarks: BenchLandmarks;
  readonly sizes: BenchFleetOptions & { nodes: number };
  readonly initial: FleetFile;
  readonly skipNaive: boolean;
}

interface ParallelPhase {
  /** full-parallel first, then `<scenario>-parallel` for each change scenario. */
  readonly results: ScenarioResult[];
  /** Every node's `status:hash` after each scenario (full-parallel and the plain scenario names). */
  readonly hashesAfter: Map<string, Map<string, string>>;
}

/**
 * The pool's start, every node on the pool, then the caller's index (`generateFleetInParallel`);
 * then the change scenarios, each change set applied to the caller's engine and replayed on the
 * pool, the affected nodes regenerated on the pool (`regenerateInParallel`), as the generator
 * service does for imports and fleet-wide changes.
 */
async function parallelPhase(
  fleet: Fleet,
  threads: number,
  scenarios: readonly BenchScenario[],
  context: ScenarioRunContext,
  progress: (message: string) => void,
): Promise<ParallelPhase> {
  const results: ScenarioResult[] = [];
  const hashesAfter = new Map<string, Map<string, string>>();
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const pool = await GenerationPool.start({ fleet, threads });
  const startedMs = performance.now() - started;
  try {
    const { engine, regeneration } = await generateFleetInParallel(fleet, pool);
    results.push(
      measured(
        {
          name: PARALLEL_FULL_SCENARIO,
          description: `full generation on ${threads} worker threads, each indexing its share of the nodes (start-up included)`,
          changeSets: () => [],
        },
        0,
        {
          // The pool's start (each worker parsing and indexing its share of the nodes) in applyMs.
          applyMs: startedMs,
          regenerateMs: performance.now() - started - startedMs,
          cpuMs: cpuMsSince(cpuBefore),
          affected: regeneration.candidates,
          recomputed: regeneration.recomputed,
          changed: regeneration.changed.length,
          naiveMs: null,
        },
      ),
    );
    hashesAfter.set(PARALLEL_FULL_SCENARIO, hashesOf(engine));
    const replays: Promise<void>[] = [];
    const target: ScenarioTarget = {
      engine,
      // Replays are not awaited one by one: a burst travels to the workers in one message.
      apply: (changeSet) => {
        const outcome = engine.apply(changeSet);
        if (outcome.ok) replays.push(pool.applyValid(outcome.change));
        return Promise.resolve(outcome);
      },
      regenerate: async () => {
        await Promise.all(replays.splice(0));
        return regenerateInParallel(engine, pool);
      },
    };
    await runChangeScenarios(
      target,
      scenarios,
      { ...context, skipNaive: true },
      (message) => progress(`${message} (on ${threads} worker threads)`),
      (scenario, result) => {
        results.push({
          ...result,
          scenario: `${scenario.name}-parallel`,
          description: `${scenario.description}, on ${threads} worker threads`,
        });
        hashesAfter.set(scenario.name, hashesOf(engine));
      },
    );
    return { results, hashesAfter };
  } finally {
    await pool.close();
  }
}

/** Each change scenario in order, each on the configuration the previous ones left. */
async function runChangeScenarios(
  target: ScenarioTarget,
  scenarios: readonly BenchScenario[],
  context: ScenarioRunContext,
  progress: (message: string) => void,
  onResult: (scenario: BenchScenario, result: ScenarioResult) => void,
): Promise<void> {
  let run = 0;
  for (const scenario of scenarios) {
    progress(scenario.description);
    const runs: RunFigures[] = [];
    let changeSetCount = 0;
    for (let iteration = 0; iteration < (scenario.repeat ?? 1); iteration++) {
      run++;
      const changeSets = scenario.changeSets({
        compiled: target.engine.compiled,
        landmarks: context.landmarks,
        sizes: context.sizes,
        run,
        iteration,
        initial: context.initial,
      });
      changeSetCount = changeSets.length;
      runs.push(await applyAndRegenerate(target, scenario.name, changeSets));
    }
    runs.sort((a, b) => a.applyMs + a.regenerateMs - (b.applyMs + b.regenerateMs));
    const median = runs[Math.floor(runs.length / 2)] as RunFigures;
    const slowest = runs[runs.length - 1] as RunFigures;
    const naiveMs = context.skipNaive
      ? null
      : naiveRegeneration(target.engine.toFleet(), target.engine.revision);
    onResult(scenario, {
      ...measured(scenario, changeSetCount, { ...median, naiveMs }),
      runs: runs.length,
      slowestEngineMs: round(slowest.applyMs + slowest.regenerateMs),
    });
  }
}

/** A parallel row with the naive figure measured on the single-threaded path. */
function withNaive(result: ScenarioResult, naiveMs: number | null): ScenarioResult {
  return {
    ...result,
    naiveMs: naiveMs === null ? null : round(naiveMs),
    speedup: naiveMs === null || result.engineMs === 0 ? null : round(naiveMs / result.engineMs),
  };
}

function hashesOf(engine: GenerationEngine): Map<string, string> {
  const hashes = new Map<string, string>();
  for (const [nodeId, result] of engine.allResults()) hashes.set(nodeId, `${result.status}:${result.hash}`);
  return hashes;
}

function sameHashes(hashes: ReadonlyMap<string, string>, engine: GenerationEngine): boolean {
  return (
    hashes.size === engine.allResults().size &&
    [...engine.allResults()].every(
      ([nodeId, result]) => hashes.get(nodeId) === `${result.status}:${result.hash}`,
    )
  );
}

/** CPU time of the whole process (every thread) since `before`. */
function cpuMsSince(before: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000;
}

function peakRssMiB(): number {
  return Math.round((process.resourceUsage().maxRSS * 1024) / MiB);
}

interface RunFigures {
  readonly applyMs: number;
  readonly regenerateMs: number;
  /** CPU time of every thread of the process (the machine is shared: wall time alone misleads). */
  readonly cpuMs: number;
  readonly affected: number;
  readonly recomputed: number;
  readonly changed: number;
}

async function applyAndRegenerate(
  target: ScenarioTarget,
  scenario: string,
  changeSets: readonly unknown[],
): Promise<RunFigures> {
  const applyStarted = performance.now();
  const cpuBefore = process.cpuUsage();
  const affected = new Set<string>();
  for (const changeSet of changeSets) {
    const outcome = await target.apply(changeSet);
    if (!outcome.ok)
      throw new Error(
        `scenario ${scenario}: change set rejected: ${outcome.issues
          .slice(0, 3)
          .map((issue) => `${issue.path}: ${issue.message}`)
          .join('; ')}`,
      );
    for (const nodeId of outcome.affected) affected.add(nodeId);
  }
  const applyMs = performance.now() - applyStarted;
  const regenerateStarted = performance.now();
  const regeneration = await target.regenerate();
  return {
    applyMs,
    regenerateMs: performance.now() - regenerateStarted,
    cpuMs: cpuMsSince(cpuBefore),
    affected: affected.size,
    recomputed: regeneration.recomputed,
    changed: regeneration.changed.length,
  };
}

/** What Rudder does on any change: every node generated again, from the whole configuration. */
function naiveRegeneration(fleet: Fleet, revision: number): number {
  const started = performance.now();
  GenerationEngine.fromFleet(fleet, { revision }).regenerate();
  return performance.now() - started;
}

function measured(
  scenario: BenchScenario,
  changeSets: number,
  figures: {
    applyMs: number;
    regenerateMs: number;
    cpuMs: number;
    affected: number;
    recomputed: number;
    changed: number;
    naiveMs: number | null;
    peakRssMiB?: number;
  },
): ScenarioResult {
  const engineMs = figures.applyMs + figures.regenerateMs;
  const usage = process.memoryUsage();
  return {
    scenario: scenario.name,
    description: scenario.description,
    changeSets,
    engineMs: round(engineMs),
    applyMs: round(figures.applyMs),
    regenerateMs: round(figures.regenerateMs),
    cpuMs: round(figures.cpuMs),
    affected: figures.affected,
    recomputed: figures.recomputed,
    changed: figures.changed,
    recomputedUnchanged: figures.recomputed - Math.min(figures.recomputed, figures.changed),
    naiveMs: figures.naiveMs === null ? null : round(figures.naiveMs),
    speedup: figures.naiveMs === null || engineMs === 0 ? null : round(figures.naiveMs / engineMs),
    peakRssMiB: figures.peakRssMiB ?? peakRssMiB(),
    rssMiB: Math.round(usage.rss / MiB),
    loadAverage: loadavg().map((load) => round(load)),
  };
}

function selectScenarios(names: readonly string[]): BenchScenario[] {
  if (names.length === 0) return [...SCENARIOS];
  const unknown = names.filter((name) => !SCENARIOS.some((scenario) => scenario.name === name));
  if (unknown.length > 0)
    throw new RangeError(`unknown scenario ${unknown.join(', ')} (one of ${scenarioNames().join(', ')})`);
  return SCENARIOS.filter((scenario) => names.includes(scenario.name));
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}
