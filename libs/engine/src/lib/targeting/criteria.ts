import type { Criterion, FleetNode } from '../model/fleet';
import type { Json } from '../model/json';
import { canonicalJson, isJsonObject } from '../model/json';

/** The value at a dot path (`os.name`) inside facts or properties; undefined when absent. */
export function valueAtPath(root: Readonly<Record<string, Json>>, path: string): Json | undefined {
  let current: Json | undefined = root as Json;
  for (const segment of segmentsOf(path)) {
    if (!isJsonObject(current)) return undefined;
    current = current[segment];
  }
  return current;
}

/** Paths are few (those criteria name) and read for every node: each is split once. */
const pathSegments = new Map<string, readonly string[]>();

function segmentsOf(path: string): readonly string[] {
  let segments = pathSegments.get(path);
  if (!segments) {
    segments = path.split('.');
    // A memo of a pure function, bounded: clearing it changes nothing but speed.
    if (pathSegments.size >= 10_000) pathSegments.clear();
    pathSegments.set(path, segments);
  }
  return segments;
}

/** Evaluates a fact or property criterion on a node (`{group}` criteria are the caller's). */
export function matchesCriterion(
  criterion: Exclude<Criterion, { group: string }>,
  node: FleetNode,
  regexCache: Map<string, RegExp>,
): boolean {
  const actual =
    'fact' in criterion
      ? valueAtPath(node.facts, criterion.fact)
      : valueAtPath(node.properties, criterion.property);
  const expected = criterion.value;
  switch (criterion.op) {
    case 'exists':
      return actual !== undefined;
    case 'notExists':
      return actual === undefined;
    default:
      // A criterion on a missing fact is false (fleet-format.md), `neq` included.
      if (actual === undefined || expected === undefined) return false;
  }
  switch (criterion.op) {
    case 'eq':
      return sameValue(actual, expected);
    case 'neq':
      return !sameValue(actual, expected);
    case 'in':
      return Array.isArray(expected) && expected.some((candidate) => sameValue(actual, candidate));
    case 'regex': {
      const pattern = String(expected);
      let regex = regexCache.get(pattern);
      if (!regex) {
        regex = new RegExp(pattern);
        regexCache.set(pattern, regex);
      }
      return regex.test(textOf(actual));
    }
    case 'lt':
      return compareOrdered(actual, expected, (order) => order < 0);
    case 'le':
      return compareOrdered(actual, expected, (order) => order <= 0);
    case 'gt':
      return compareOrdered(actual, expected, (order) => order > 0);
    case 'ge':
      return compareOrdered(actual, expected, (order) => order >= 0);
  }
}

function textOf(value: Json): string {
  return typeof value === 'string' ? value : canonicalJson(value);
}

/** Scalars compare by their text ("12" equals 12); structures compare structurally. */
function sameValue(actual: Json, expected: Json): boolean {
  return textOf(actual) === textOf(expected);
}

const VERSION = /^\d+(\.\d+)*$/;

/**
 * Numbers compare as numbers; dotted versions ("12.10" > "12.9") part by part. A JSON number on both
 * sides is a number; otherwise both sides must read as versions (a plain integer is a one-part
 * version), or as decimal numbers. Anything else does not compare: the criterion is false.
 */
function compareOrdered(actual: Json, expected: Json, accept: (order: number) => boolean): boolean {
  if (typeof actual === 'number' && typeof expected === 'number') return accept(actual - expected);
  if (typeof actual !== 'string' && typeof actual !== 'number') return false;
  if (typeof expected !== 'string' && typeof expected !== 'number') return false;
  const left = String(actual);
  const right = String(expected);
  if (VERSION.test(left) && VERSION.test(right)) return accept(compareVersions(left, right));
  const leftNumber = Number(left);
  const rightNumber = Number(right);
  if (
    left.trim() !== '' &&
    right.trim() !== '' &&
    Number.isFinite(leftNumber) &&
    Number.isFinite(rightNumber)
  ) {
    return accept(leftNumber - rightNumber);
  }
  return false;
}

export function compareVersions(a: string, b: string): number {
  const left = a.split('.').map(Number);
  const right = b.split('.').map(Number);
  for (let index = 0; index < Math.max(left.length, right.length); index++) {
    const difference = (left[index] ?? 0) - (right[index] ?? 0);
    if (difference !== 0) return difference;
  }
  return 0;
}
