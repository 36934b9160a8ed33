/**
 * Lists the engine builds for every node, kept in one V8 elements kind whether empty or not.
 *
 * Why: TurboFan compiles a function for the array maps it has met. `[].map(f)` and an empty
 * `flatMap` give an array of V8's small-integer kind, a filled list of objects or strings another
 * one, so the first node with an empty list of policies, errors or references — thousands of nodes
 * into an import — throws away the optimised code of every function it reaches (`generatePrepared`
 * and all it inlines), which is then compiled again. On a cold engine of 10,000 nodes that was 60%
 * of TurboFan's time (2.05 of 3.34 s) and 44 of 91 deoptimisations.
 */

const PLACEHOLDER: unknown = Object.freeze({});

/** An empty list in the elements kind of a filled list of objects (an element added, then removed). */
export function emptyList<T>(): T[] {
  const list: unknown[] = [PLACEHOLDER];
  list.pop();
  return list as T[];
}

/** `items.map(project)`, empty in the kind of a filled list. For lists of objects or strings, not numbers. */
export function mapList<T, U>(
  items: readonly T[],
  project: (item: T, index: number, list: readonly T[]) => U,
): U[] {
  return items.length === 0 ? emptyList<U>() : items.map(project);
}

/** `items.flatMap(project)`, empty in the kind of a filled list. For lists of objects or strings, not numbers. */
export function flatMapList<T, U>(
  items: readonly T[],
  project: (item: T, index: number, list: readonly T[]) => U | readonly U[],
): U[] {
  const flat = items.length === 0 ? [] : items.flatMap(project);
  return flat.length === 0 ? emptyList<U>() : flat;
}
