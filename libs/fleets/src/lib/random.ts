/** A small seeded PRNG (mulberry32): the same seed gives the same sequence, on every platform. */
export type Random = () => number;

export function mulberry32(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One of the choices, each with its weight (weights need not sum to 1). */
export function weighted<T>(random: Random, choices: readonly (readonly [T, number])[]): T {
  const total = choices.reduce((sum, [, weight]) => sum + weight, 0);
  let point = random() * total;
  for (const [choice, weight] of choices) {
    point -= weight;
    if (point < 0) return choice;
  }
  const last = choices[choices.length - 1];
  if (!last) throw new Error('weighted: no choices');
  return last[0];
}

/** `count` distinct items of the list, in the list's order. */
export function sample<T>(random: Random, items: readonly T[], count: number): T[] {
  const indexes = new Set<number>();
  while (indexes.size < Math.min(count, items.length)) indexes.add(Math.floor(random() * items.length));
  return [...indexes].sort((a, b) => a - b).map((index) => items[index] as T);
}
