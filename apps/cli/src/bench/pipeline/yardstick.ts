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
  /**
   * Not the ruler: the same call in slices the size of a change's (the generator's slice), each
   * after a pause as long as the config-service's outbox window, as the steady phase hands nodes
   * out. What a node costs the engine when it comes in bursts, on this machine, beside what it
   * costs back to back.
   */
  readonly paced: PacedYardstick;
}

export interface PacedYardstick {
  readonly engineMsPerNode: number;
  /** `engineMsPerNode` over the ruler's. */
  readonly timesRuler: number;
  readonly slices: number;
  readonly nodesPerSlice: number;
  readonly pauseMs: number;
}

export interface YardstickOptions {
  /** The least warm-up (default 3,000 nodes); it goes on in blocks until the engine's pace settles. */
  readonly warmUpNodes?: number;
  /** The most warm-up (default 4,000 nodes). */
  readonly maxWarmUpNodes?: number;
  readonly timedNodes?: number;
  /** The paced figure's slices (default 12), nodes per slice (64) and pause before each (150 ms). */
  readonly pacedSlices?: number;
  readonly pacedSliceNodes?: number;
  readonly pacedPauseMs?: number;
}

const WARM_UP_NODES = 3_000;
const MAX_WARM_UP_NODES = 4_000;
/**
 * The warm-up goes on a block at a time until a block costs within WARM_UP_SETTLED of the one
 * before it: a fresh process's engine costs ~3× its settled pace over its first thousand nodes,
 * ~1.5× over the next and settles over the third (the compiler's threads, counted in the process's
 * CPU, at work meanwhile), and a ruler timed on those would flatter every multiple of it. Two blocks
 * that agree earlier than that are no proof: they did, at 2,000 nodes, with the next round still 30%
 * above the settled pace.
 */
const WARM_UP_BLOCK = 500;
const WARM_UP_SETTLED = 0.1;
const TIMED_NODES = 2_000;
/** Rounds of TIMED_NODES each. */
const ROUNDS = 3;
/** As the generator's loop: results are held a slice at a time before publishing lets them go. */
const SLICE = 500;
/** The generator's slice of a change's own nodes, and the config-service's outbox window (their defaults). */
const PACED_SLICE_NODES = 64;
const PACED_PAUSE_MS = 150;
const PACED_SLICES = 12;

/**
 * Materialises nodes exactly as the generator's loop does, on an engine of its own that nobody
 * else has warmed: a warm-up first (the engine's shared caches fill), then the timed nodes, spread
 * over the rest of the fleet. The publisher adds no engine work: contents, manifest and hashes
 * all come from this call.
 */
export function measureYardstick(fleet: Fleet, options: YardstickOptions = {}): Yardstick {
  const { engine, cached, warmUp, timed, rounds } = timeRounds(fleet, options);
  const engineMsPerNode = rounds.cpuMsPerNode;
  const nodeIds = engine.compiled.nodeIds;
  const timedOrWarm = new Set([...warmUp, ...timed]);
  const untouched = nodeIds.filter((nodeId) => !timedOrWarm.has(nodeId));
  // A small fleet has none left: its timed nodes then, their files known already (a cheaper figure).
  const paced = measurePaced(engine, untouched.length > 0 ? untouched : timed, cached, options);
  return {
    engineMsPerNode,
    engineWallMsPerNode: rounds.wallMsPerNode,
    roundsMsPerNode: rounds.roundsMsPerNode,
    nodesTimed: timed.length,
    warmUpNodes: warmUp.length,
    method:
      `engine.regenerateNode(nodeId, { materialise: true, generatedAt: Date.now(), stored }) on a fresh GenerationEngine ` +
      `of the validated fleet, as the generator's loop calls it (stored: the digests handed out before, as its cache holds them), ` +
      `single-threaded in the bench process before any service starts: ${timed.length} nodes spread over the fleet ` +
      `in ${rounds.roundsMsPerNode.length} rounds after ${warmUp.length} warm-up nodes (at least ${options.warmUpNodes ?? WARM_UP_NODES} or half the fleet, ` +
      `then blocks of ${WARM_UP_BLOCK} until two in a row cost within ${WARM_UP_SETTLED * 100}% of each other); the median round's CPU time per node ` +
      `(process.cpuUsage), its wall time beside it.`,
    paced: {
      engineMsPerNode: round(paced.cpuMs, 4),
      timesRuler: engineMsPerNode > 0 ? round(paced.cpuMs / engineMsPerNode, 2) : 0,
      slices: paced.slices,
      nodesPerSlice: paced.nodesPerSlice,
      pauseMs: paced.pauseMs,
    },
  };
}

/** The ruler timed again the same way, on a fresh engine: how far the machine moved during a run. */
export interface RulerCheck {
  readonly engineMsPerNode: number;
  readonly roundsMsPerNode: readonly number[];
  /** The change from the ruler, in percent (positive: the machine got slower). */
  readonly driftPercent: number;
}

/**
 * Times the ruler again (the paced figure aside), for a run to report next to the ruler it was
 * judged by: the machine's speed moves between the two, and a multiple is only as steady as its ruler.
 */
export function checkRuler(fleet: Fleet, ruler: Yardstick, options: YardstickOptions = {}): RulerCheck {
  const { rounds } = timeRounds(fleet, options);
  return {
    engineMsPerNode: rounds.cpuMsPerNode,
    roundsMsPerNode: rounds.roundsMsPerNode,
    driftPercent:
      ruler.engineMsPerNode > 0
        ? round(((rounds.cpuMsPerNode - ruler.engineMsPerNode) / ruler.engineMsPerNode) * 100, 1)
        : 0,
  };
}

interface TimedRounds {
  readonly engine: GenerationEngine;
  readonly cached: Set<string>;
  readonly warmUp: readonly string[];
  readonly timed: readonly string[];
  readonly rounds: {
    readonly cpuMsPerNode: number;
    readonly wallMsPerNode: number;
    readonly roundsMsPerNode: readonly number[];
  };
}

/** A fresh engine's warm-up, then its timed nodes in rounds: the median round's CPU and wall ms per node. */
function timeRounds(fleet: Fleet, options: YardstickOptions): TimedRounds {
  const engine = GenerationEngine.fromFleet(fleet);
  const nodeIds = engine.compiled.nodeIds;
  const wanted = (options.timedNodes ?? TIMED_NODES) * ROUNDS;
  // Nodes left untouched for the paced figure, which times nodes the engine has not computed yet.
  const paced = (options.pacedSlices ?? PACED_SLICES) * (options.pacedSliceNodes ?? PACED_SLICE_NODES);
  // A small fleet keeps at least half of its nodes to time.
  const half = Math.floor(nodeIds.length / 2);
  const leastWarmUp = Math.min(options.warmUpNodes ?? WARM_UP_NODES, half);
  const mostWarmUp = Math.max(
    leastWarmUp,
    Math.min(options.maxWarmUpNodes ?? MAX_WARM_UP_NODES, half, nodeIds.length - wanted - paced),
  );
  const cached = new Set<string>();
  const warmUp = warmUpUntilSettled(engine, nodeIds, leastWarmUp, mostWarmUp, cached);
  const timed = spread(nodeIds.slice(warmUp.length), wanted);
  // A fresh engine owns every node and holds no result, but a node must not be skipped as unchanged.
  engine.forceRegeneration(timed);
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
    engine,
    cached,
    warmUp,
    timed,
    rounds: {
      cpuMsPerNode: perNode(median(measured.map((figures) => figures.cpuMs))),
      wallMsPerNode: perNode(median(measured.map((figures) => figures.wallMs))),
      roundsMsPerNode: measured.map((figures) => perNode(figures.cpuMs)),
    },
  };
}

/**
 * Materialises the first nodes, a block at a time, until at least `least` and either `most` or two
 * blocks in a row within WARM_UP_SETTLED of each other's CPU per node. Says which nodes it took.
 */
function warmUpUntilSettled(
  engine: GenerationEngine,
  nodeIds: readonly string[],
  least: number,
  most: number,
  cached: Set<string>,
): readonly string[] {
  let done = 0;
  let previous = Number.POSITIVE_INFINITY;
  while (done < most) {
    const block = nodeIds.slice(done, Math.min(most, done + WARM_UP_BLOCK));
    const before = process.cpuUsage();
    materialise(engine, block, cached);
    const spent = process.cpuUsage(before);
    done += block.length;
    const perNode = (spent.user + spent.system) / block.length;
    if (done >= least && Math.abs(perNode - previous) <= WARM_UP_SETTLED * previous) break;
    previous = perNode;
  }
  return nodeIds.slice(0, done);
}

/**
 * Nodes neither warmed up nor timed (as a change brings nodes the engine has not computed since),
 * a slice at a time after a pause: the process's CPU over the whole span, pauses included, per
 * node (a sleeping thread spends none; the collector's threads finishing meanwhile count). The
 * pause blocks the thread as an idle event loop does.
 */
function measurePaced(
  engine: GenerationEngine,
  nodeIds: readonly string[],
  cached: Set<string>,
  options: YardstickOptions,
): { cpuMs: number; slices: number; nodesPerSlice: number; pauseMs: number } {
  const nodesPerSlice = Math.max(1, Math.min(options.pacedSliceNodes ?? PACED_SLICE_NODES, nodeIds.length));
  const slices = Math.max(
    1,
    Math.min(options.pacedSlices ?? PACED_SLICES, Math.floor(nodeIds.length / nodesPerSlice)),
  );
  const pauseMs = options.pacedPauseMs ?? PACED_PAUSE_MS;
  const picked = spread(nodeIds, slices * nodesPerSlice);
  engine.forceRegeneration(picked);
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  const before = process.cpuUsage();
  for (let slice = 0; slice < slices; slice++) {
    Atomics.wait(sleeper, 0, 0, pauseMs);
    materialise(engine, picked.slice(slice * nodesPerSlice, (slice + 1) * nodesPerSlice), cached);
  }
  const spent = process.cpuUsage(before);
  const cpuMs = (spent.user + spent.system) / 1000;
  return { cpuMs: picked.length === 0 ? 0 : cpuMs / picked.length, slices, nodesPerSlice, pauseMs };
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
