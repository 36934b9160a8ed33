/**
 * Java's `String.CASE_INSENSITIVE_ORDER`: code unit by code unit, equal when equal after
 * upper-casing or after lower-casing, else ordered by the lower-cased units; then by length.
 */
export function compareCaseInsensitive(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let index = 0; index < length; index++) {
    const x = a.charCodeAt(index);
    const y = b.charCodeAt(index);
    if (x === y) continue;
    const upperX = toUpperUnit(x);
    const upperY = toUpperUnit(y);
    if (upperX === upperY) continue;
    const lowerX = toLowerUnit(upperX);
    const lowerY = toLowerUnit(upperY);
    if (lowerX !== lowerY) return lowerX - lowerY;
  }
  return a.length - b.length;
}

/**
 * Plain code-unit order, as Java's `String.compareTo` (its sign): JavaScript's relational operators
 * compare strings code unit by code unit, natively.
 */
export function compareCodeUnits(a: string, b: string): number {
  return a === b ? 0 : a < b ? -1 : 1;
}

/**
 * A string whose code-unit order is Java's `CASE_INSENSITIVE_ORDER` of the original:
 * `compareCodeUnits(foldCase(a), foldCase(b)) === compareCaseInsensitive(a, b)`, unit by unit.
 */
export function foldCase(text: string): string {
  let folded = '';
  for (let index = 0; index < text.length; index++)
    folded += String.fromCharCode(toLowerUnit(toUpperUnit(text.charCodeAt(index))));
  return folded;
}

function toUpperUnit(unit: number): number {
  const upper = String.fromCharCode(unit).toUpperCase();
  return upper.length === 1 ? upper.charCodeAt(0) : unit;
}

function toLowerUnit(unit: number): number {
  const lower = String.fromCharCode(unit).toLowerCase();
  return lower.length === 1 ? lower.charCodeAt(0) : unit;
}

/** Sorts a copy by the comparator; never mutates its input. */
export function sortedBy<T>(items: Iterable<T>, compare: (a: T, b: T) => number): T[] {
  return [...items].sort(compare);
}
