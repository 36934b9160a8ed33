import type { Random } from '../random';

export interface BenchFleetOptions {
  /** Nodes of the fleet, the relays' own nodes included. Default 100,000. */
  nodes?: number;
  /** Seed of every random choice. Default 1. */
  seed?: number;
  /** Default 1,000. */
  groups?: number;
  /** Default 2,000. */
  directives?: number;
  /** Default 100. */
  techniques?: number;
  /** Default 400. */
  rules?: number;
  /** Default 10. */
  relays?: number;
}

export type BenchSizes = Required<BenchFleetOptions>;

export const BENCH_DEFAULTS: BenchSizes = {
  nodes: 100_000,
  seed: 1,
  groups: 1_000,
  directives: 2_000,
  techniques: 100,
  rules: 400,
  relays: 10,
};

/** Below these the fixed families (one group per datacenter, role...) and the landmarks do not fit. */
export const BENCH_MINIMUMS = {
  groups: 90,
  rules: 24,
  techniques: 10,
  directives: 30,
  relays: 0,
} as const;

export function resolveSizes(options: BenchFleetOptions = {}): BenchSizes {
  const sizes: BenchSizes = { ...BENCH_DEFAULTS };
  for (const key of Object.keys(BENCH_DEFAULTS) as (keyof BenchSizes)[]) {
    const value = options[key];
    if (value === undefined) continue;
    if (!Number.isSafeInteger(value) || (key !== 'seed' && value < 0))
      throw new RangeError(`bench fleet: ${key} must be a non-negative integer (got ${value})`);
    sizes[key] = value;
  }
  for (const [key, minimum] of Object.entries(BENCH_MINIMUMS) as [keyof typeof BENCH_MINIMUMS, number][]) {
    if (sizes[key] < minimum) throw new RangeError(`bench fleet: ${key} must be at least ${minimum}`);
  }
  if (sizes.nodes < sizes.relays + 100)
    throw new RangeError('bench fleet: nodes must exceed relays by at least 100');
  return sizes;
}

/**
 * A 32-bit hash of (seed, stream): independent generator seeds for each part of the fleet, so that
 * a node's facts depend on its index only, whatever the other sizes are.
 */
export function mixSeed(seed: number, stream: number): number {
  let hash =
    Math.imul((seed | 0) ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul((stream | 0) + 0x632be5ab, 0xc2b2ae35);
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x7feb352d);
  hash ^= hash >>> 15;
  hash = Math.imul(hash, 0x846ca68b);
  hash ^= hash >>> 16;
  return hash >>> 0;
}

/** Streams of `mixSeed` for the non-node parts (node streams are their non-negative indexes). */
export const STREAMS = {
  techniques: -1,
  directives: -2,
  groups: -3,
  rules: -4,
  assignment: -5,
  relationships: -6,
  landmarks: -7,
} as const;

/** A weighted choice with the cumulative weights computed once: nodes pick from it 100,000 times. */
export function picker<T>(choices: readonly (readonly [T, number])[]): (random: Random) => T {
  const values = choices.map(([value]) => value);
  const cumulative: number[] = [];
  let total = 0;
  for (const [, weight] of choices) cumulative.push((total += weight));
  if (values.length === 0) throw new Error('picker: no choices');
  return (random) => {
    const point = random() * total;
    let low = 0;
    let high = cumulative.length - 1;
    while (low < high) {
      const middle = (low + high) >> 1;
      if ((cumulative[middle] as number) > point) high = middle;
      else low = middle + 1;
    }
    return values[low] as T;
  };
}

export function integerBetween(random: Random, low: number, high: number): number {
  return low + Math.floor(random() * (high - low + 1));
}

/** Fisher–Yates, in place. */
export function shuffle<T>(random: Random, items: T[]): T[] {
  for (let index = items.length - 1; index > 0; index--) {
    const other = Math.floor(random() * (index + 1));
    [items[index], items[other]] = [items[other] as T, items[index] as T];
  }
  return items;
}

export function pad(value: number, width: number): string {
  return String(value).padStart(width, '0');
}
