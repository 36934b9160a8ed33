import type { Json } from '../model/json';
import { isJsonObject } from '../model/json';
import type { PathSegment } from './json-path';

/**
 * What one configuration may hold (hostile input, issue 17): beyond these, a value would stall a
 * relay (an id is a directory name), overflow a recursion of the generator (nesting), or be copied
 * into every node's tree (a global parameter is in each node's properties.json).
 */
export const LIMITS = {
  /** Characters of an id: relays name a node's directory by it (255 bytes at most on Linux). */
  maxIdLength: 128,
  /** Characters of a display name (techniques, directives, rules, groups). */
  maxNameLength: 1024,
  /** Levels of nesting of a document (a fleet file or a change set), containers counted. */
  maxDocumentDepth: 64,
  /** Levels of nesting of one value (a parameter, a property, a fact), containers counted. */
  maxValueDepth: 32,
  /** Bytes of one value as JSON (UTF-8), unless `settings.maxValueBytes` says otherwise. */
  maxValueBytes: 64 * 1024,
} as const;

/** A node's files, unless `settings.maxBundleBytes` says otherwise: a typical tree is 100-300 KB. */
export const DEFAULT_MAX_BUNDLE_BYTES = 16 * 1024 * 1024;

/**
 * The path of the first container nested deeper than `maxDepth` (a bare value has depth 0, `[]`
 * depth 1), or undefined. Iterative: a document nested 100,000 levels deep costs a loop, not the
 * stack, and nothing else reads it once this refused it. Containers only are visited, each linked
 * to its parent: the path is put together for the one refused, not for every value of a fleet.
 */
export function tooDeep(value: unknown, maxDepth: number): PathSegment[] | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const waiting: Container[] = [{ value, key: '', parent: undefined, depth: 0 }];
  for (let container = waiting.pop(); container !== undefined; container = waiting.pop()) {
    if (container.depth >= maxDepth) return pathTo(container);
    const depth = container.depth + 1;
    const parent = container;
    if (Array.isArray(parent.value)) {
      const items: readonly unknown[] = parent.value;
      for (let index = 0; index < items.length; index++) {
        const item = items[index];
        if (typeof item === 'object' && item !== null)
          waiting.push({ value: item, key: index, parent, depth });
      }
    } else {
      const members = parent.value as Record<string, unknown>;
      for (const key of Object.keys(members)) {
        const item = members[key];
        if (typeof item === 'object' && item !== null) waiting.push({ value: item, key, parent, depth });
      }
    }
  }
  return undefined;
}

interface Container {
  readonly value: object;
  /** Its key in its parent (the root's is not part of any path). */
  readonly key: PathSegment;
  readonly parent: Container | undefined;
  readonly depth: number;
}

function pathTo(container: Container): PathSegment[] {
  const path: PathSegment[] = [];
  for (let at: Container = container; at.parent !== undefined; at = at.parent) path.push(at.key);
  return path.reverse();
}

/** Refuses the values of a map (parameters, properties, facts) nested too deep or too large. */
export function checkValueLimits(
  values: Readonly<Record<string, Json>>,
  path: readonly PathSegment[],
  report: (path: readonly PathSegment[], message: string) => void,
  maxValueBytes: number,
): void {
  for (const [name, value] of Object.entries(values)) {
    if (!isJsonObject(value) && !Array.isArray(value) && typeof value !== 'string') continue;
    const deep = tooDeep(value, LIMITS.maxValueDepth);
    if (deep) {
      report([...path, name, ...deep], `is nested more than ${LIMITS.maxValueDepth} levels deep`);
      continue;
    }
    const bytes = utf8Length(JSON.stringify(value));
    if (bytes > maxValueBytes)
      report(
        [...path, name],
        `is ${bytes} bytes as JSON, more than settings.maxValueBytes (${maxValueBytes})`,
      );
  }
}

/** Whether a text holds a C0 control character or DEL (U+0000–U+001F, U+007F). */
export function hasControlCharacter(text: string): boolean {
  for (let index = 0; index < text.length; index++) {
    const unit = text.charCodeAt(index);
    if (unit < 0x20 || unit === 0x7f) return true;
  }
  return false;
}

/** Bytes of a text in UTF-8 (a lone surrogate counts 3, as its replacement would). */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let index = 0; index < text.length; index++) {
    const unit = text.charCodeAt(index);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && (text.charCodeAt(index + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      index++;
    } else bytes += 3;
  }
  return bytes;
}
