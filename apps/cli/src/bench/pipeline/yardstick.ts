import { performance } from 'node:perf_hooks';
import { GenerationEngine } from '@policygen/engine';
import type { Fleet } from '@policygen/engine';

/** This process's single-thread cost of a node's complete bundle: what the services' CPU is measured against. */
export interface Yardstick {
  /** Wall-clock ms per node of `regenerateNode(…, { materialise: true })` on a fresh engine. */
  readonly engineMsPerNode: number;
  /** This process's CPU ms per node over the same loop (above the wall figure: GC threads). */
  readonly engineCpuMsPerNode: number;
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
  const timed = spread(nodeIds.slice(warmUp.length), options.timedNodes ?? TIMED_NODES);
  // A fresh engine owns every node and holds no result, but a node must not be skipped as unchanged.
  engine.forceRegeneration(timed);
  materialise(engine, warmUp);
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const skipped = materialise(engine, timed);
  const elapsed = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  if (skipped > 0)
    throw new Error(`the yardstick skipped ${skipped} timed node(s) instead of computing them`);
  const perNode = (ms: number): number => (timed.length > 0 ? round(ms / timed.length, 4) : 0);
  return {
    engineMsPerNode: perNode(elapsed),
    engineCpuMsPerNode: perNode((cpu.user + cpu.system) / 1000),
    nodesTimed: timed.length,
    warmUpNodes: warmUp.length,
    method:
      `engine.regenerateNode(nodeId, { materialise: true, generatedAt: Date.now() }) on a fresh GenerationEngine ` +
      `of the validated fleet, single-threaded in the bench process before any service starts: ` +
      `${timed.length} nodes spread over the fleet timed with performance.now() after ${warmUp.length} warm-up nodes.`,
  };
}

/** Materialises the nodes as the generator's loop does; says how many were skipped. */
function materialise(engine: GenerationEngine, nodeIds: readonly string[]): number {
  let skipped = 0;
  let held: unknown[] = [];
  for (const nodeId of nodeIds) {
    const regeneration = engine.regenerateNode(nodeId, { materialise: true, generatedAt: Date.now() });
    if (regeneration.skipped) skipped++;
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
