import { ID_PATTERN, INHERIT_MODE_PATTERN } from '../model/fleet';
import type { Json } from '../model/json';
import { LIMITS } from './limits';

/** The checks the plain readers (`plainNode`, `plainDirective`, `plainGroup`) share. */

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    Object.getPrototypeOf(value) === Object.prototype &&
    !Object.hasOwn(value, '__proto__')
  );
}

export function isId(value: unknown): value is string {
  return typeof value === 'string' && value.length <= LIMITS.maxIdLength && ID_PATTERN.test(value);
}

export function isInheritModes(value: unknown): value is Record<string, string> {
  if (!isPlainObject(value)) return false;
  for (const key of Object.keys(value)) {
    const mode = value[key];
    if (typeof mode !== 'string' || !INHERIT_MODE_PATTERN.test(mode)) return false;
  }
  return true;
}

/** Deeper than a document may be is left to the schema (and to the depth check before it). */
export function isJsonRecord(value: unknown, depth: number): value is Record<string, Json> {
  if (!isPlainObject(value) || depth > LIMITS.maxDocumentDepth) return false;
  for (const key of Object.keys(value)) if (!isJson(value[key], depth + 1)) return false;
  return true;
}

export function isJson(value: unknown, depth: number): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value);
    case 'object':
      if (value === null) return true;
      if (!Array.isArray(value)) return isJsonRecord(value, depth);
      if (Object.getPrototypeOf(value) !== Array.prototype || depth > LIMITS.maxDocumentDepth) return false;
      for (let index = 0; index < value.length; index++)
        if (!(index in value) || !isJson(value[index], depth + 1)) return false;
      return true;
    default:
      return false;
  }
}
