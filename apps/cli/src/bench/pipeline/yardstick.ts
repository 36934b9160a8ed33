import { performance } from 'node:perf_hooks';
import { GenerationEngine, MANIFEST_FILE } from '@policygen/engine';
import type { Fleet } from '@policygen/engine';

/** This process's single-thread cost of a node's complete bundle: what the services' CPU is measured against. */
export interface Yardstick {
  /**
   * This process's CPU ms per node of materialising bundles as the generator does, on a fresh
   * engine: the ruler. CPU, like the services' figures it divides, so that a loaded machine (which
   * stretches wall time, not CPU time) leaves the ratios as they are; GC threads included on both sides.
   */
  readonly engineMsPerNode: number;
  /** Wall-clock ms per node over the same loop (below the CPU figure on a quiet machine: GC threads). */
  readonly engineWallMsPerNode: number;
  /** Each round's CPU ms per node, in the order run: how steady the ruler was. */
  readonly roundsMsPerNode: readonly number[];
  readonly nodesTimed: number;
  readonly warmUpNodes: number;
  readonly method: string;
}

export interface YardstickOptions {
  readonly warmUpNodes?: number;
  readonly timedNodes?: number;
}

const WARM_UP_NODES = 500;
const TIMED_NODES = 2_000;
/** Rounds of TIMED_NODES each. */
const ROUNDS = 3;
/** As the generator's loop: results are held a slice at a time before publishing lets them go. */
const SLICE = 500;

/**
 * Materialises nodes exactly as the generator's loop does, on an engine of its own that nobody
 * else has warmed: a warm-up first (the engine's shared caches fill), then the timed nodes, spread
 * over the rest of the fleet. The publisher adds no engine work: contents, manifest and hashes
 * all come from this call.
 */
export function measureYardstick(fleet: Fleet, options: YardstickOptions = {}): Yardstick {
  const engine = GenerationEngine.fromFleet(fleet);
  const nodeIds = engine.compiled.nodeIds;
  // A small fleet keeps at least half of its nodes to time.
  const warmUp = nodeIds.slice(
    0,
    Math.min(options.warmUpNodes ?? WARM_UP_NODES, Math.floor(nodeIds.length / 2)),
  );
  const timed = spread(nodeIds.slice(warmUp.length), (options.timedNodes ?? TIMED_NODES) * ROUNDS);
  // A fresh engine owns every node and holds no result, but a node must not be skipped as unchanged.
  engine.forceRegeneration(timed);
  const cached = new Set<string>();
  materialise(engine, warmUp, cached);
  // Rounds of different nodes, the median kept: one round moves with a collection or a neighbour's burst.
  const rounds = Array.from({ length: ROUNDS }, (_, round) =>
    timed.filter((_nodeId, index) => index % ROUNDS === round),
  ).filter((round) => round.length > 0);
  const measured = rounds.map((round) => {
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    const skipped = materialise(engine, round, cached);
    const elapsed = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    if (skipped > 0)
      throw new Error(`the yardstick skipped ${skipped} timed node(s) instead of computing them`);
    return { cpuMs: (cpu.user + cpu.system) / 1000 / round.length, wallMs: elapsed / round.length };
  });
  const median = (values: number[]): number => {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted.length === 0 ? 0 : (sorted[Math.floor((sorted.length - 1) / 2)] as number);
  };
  const perNode = (ms: number): number => round(ms, 4);
  return {
    engineMsPerNode: perNode(median(measured.map((figures) => figures.cpuMs))),
    engineWallMsPerNode: perNode(median(measured.map((figures) => figures.wallMs))),
    roundsMsPerNode: measured.map((figures) => perNode(figures.cpuMs)),
    nodesTimed: timed.length,
    warmUpNodes: warmUp.length,
    method:
      `engine.regenerateNode(nodeId, { materialise: true, generatedAt: Date.now(), stored }) on a fresh GenerationEngine ` +
      `of the validated fleet, as the generator's loop calls it (stored: the digests handed out before, as its cache holds them), ` +
      `single-threaded in the bench process before any service starts: ${timed.length} nodes spread over the fleet ` +
      `in ${rounds.length} rounds after ${warmUp.length} warm-up nodes; the median round's CPU time per node ` +
      `(process.cpuUsage), its wall time beside it.`,
  };
}

/**
 * Materialises the nodes as the generator's loop does: files whose digests were handed out before
 * (its cache holds them) are not rendered again. Says how many were skipped.
 */
function materialise(engine: GenerationEngine, nodeIds: readonly string[], cached: Set<string>): number {
  let skipped = 0;
  let held: unknown[] = [];
  const stored = (sha256: string): boolean => cached.has(sha256);
  for (const nodeId of nodeIds) {
    const regeneration = engine.regenerateNode(nodeId, {
      materialise: true,
      generatedAt: Date.now(),
      stored,
    });
    if (regeneration.skipped) skipped++;
    else
      for (const file of regeneration.bundle?.files ?? [])
        if (file.content !== undefined && file.path !== MANIFEST_FILE) cached.add(file.sha256);
    held.push(regeneration);
    if (held.length >= SLICE) held = [];
  }
  return skipped;
}

/** Up to `count` of the ids, evenly spread over them. */
export function spread(ids: readonly string[], count: number): string[] {
  if (ids.length <= count) return [...ids];
  const step = ids.length / count;
  return Array.from({ length: count }, (_, index) => ids[Math.floor(index * step)] as string);
}

function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}
