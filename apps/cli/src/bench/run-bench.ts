import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { GenerationEngine, validateFleet } from '@policygen/engine';
import type { Fleet } from '@policygen/engine';
import { buildBenchFleet } from '@policygen/fleets';
import { GenerationPool, generateFleetInParallel } from '@policygen/generation-pool';
import type { BenchFleetOptions } from '@policygen/fleets';
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

  // The parallel generation first, on a heap holding nothing else: a service does one or the other.
  let parallel: Awaited<ReturnType<typeof parallelFullGeneration>> | undefined;
  if (options.threads > 1 && selected.some((scenario) => scenario.name === FULL_SCENARIO)) {
    progress(`full generation on ${options.threads} worker threads`);
    parallel = await parallelFullGeneration(fleet, options.threads);
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

  if (parallel) {
    results.push(
      measured(
        {
          name: PARALLEL_FULL_SCENARIO,
          description: `full generation on ${options.threads} worker threads, each indexing its share of the nodes (start-up included)`,
          changeSets: () => [],
        },
        0,
        { ...parallel.figures, naiveMs: fullMs, peakRssMiB: parallel.peakRssMiB },
      ),
    );
    const hashes = parallel.hashes;
    const identical =
      hashes.size === engine.allResults().size &&
      [...engine.allResults()].every(
        ([nodeId, result]) => hashes.get(nodeId) === `${result.status}:${result.hash}`,
      );
    if (!identical) throw new Error('the parallel full generation differs from the single-threaded one');
  }

  let run = 0;
  for (const scenario of selected) {
    if (scenario.name === FULL_SCENARIO) continue;
    progress(scenario.description);
    const runs: RunFigures[] = [];
    let changeSetCount = 0;
    for (let iteration = 0; iteration < (scenario.repeat ?? 1); iteration++) {
      run++;
      const changeSets = scenario.changeSets({
        compiled: engine.compiled,
        landmarks: bench.landmarks,
        sizes,
        run,
        iteration,
        initial: bench.fleet,
      });
      changeSetCount = changeSets.length;
      runs.push(applyAndRegenerate(engine, scenario.name, changeSets));
    }
    runs.sort((a, b) => a.applyMs + a.regenerateMs - (b.applyMs + b.regenerateMs));
    const median = runs[Math.floor(runs.length / 2)] as RunFigures;
    const slowest = runs[runs.length - 1] as RunFigures;
    const naiveMs = options.skipNaive ? null : naiveRegeneration(engine.toFleet(), engine.revision);
    results.push({
      ...measured(scenario, changeSetCount, { ...median, naiveMs }),
      runs: runs.length,
      slowestEngineMs: round(slowest.applyMs + slowest.regenerateMs),
    });
  }

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

/** The pool's start, every node on the pool, then the caller's index (`generateFleetInParallel`). */
async function parallelFullGeneration(
  fleet: Fleet,
  threads: number,
): Promise<{ figures: RunFigures; hashes: Map<string, string>; peakRssMiB: number }> {
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const pool = await GenerationPool.start({ fleet, threads });
  const startedMs = performance.now() - started;
  try {
    const { engine, regeneration } = await generateFleetInParallel(fleet, pool);
    const figures: RunFigures = {
      // The pool's start (each worker parsing and indexing its share of the nodes) in applyMs.
      applyMs: startedMs,
      regenerateMs: performance.now() - started - startedMs,
      cpuMs: cpuMsSince(cpuBefore),
      affected: regeneration.candidates,
      recomputed: regeneration.recomputed,
      changed: regeneration.changed.length,
    };
    const hashes = new Map<string, string>();
    for (const [nodeId, result] of engine.allResults()) hashes.set(nodeId, `${result.status}:${result.hash}`);
    return { figures, hashes, peakRssMiB: peakRssMiB() };
  } finally {
    await pool.close();
  }
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

function applyAndRegenerate(
  engine: GenerationEngine,
  scenario: string,
  changeSets: readonly unknown[],
): RunFigures {
  const applyStarted = performance.now();
  const cpuBefore = process.cpuUsage();
  const affected = new Set<string>();
  for (const changeSet of changeSets) {
    const outcome = engine.apply(changeSet);
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
  const regeneration = engine.regenerate();
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
