import { compareCodeUnits } from '../text/compare';

function position(list: readonly string[], item: string, compare: (a: string, b: string) => number): number {
  let low = 0;
  let high = list.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (compare(list[middle] as string, item) < 0) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** Adds an id to a list kept sorted (by code units unless told); no duplicates. */
export function insertSorted(
  list: string[],
  item: string,
  compare: (a: string, b: string) => number = compareCodeUnits,
): void {
  const at = position(list, item, compare);
  if (list[at] !== item) list.splice(at, 0, item);
}

export function removeSorted(list: string[], item: string): void {
  const at = position(list, item, compareCodeUnits);
  if (list[at] === item) list.splice(at, 1);
}
