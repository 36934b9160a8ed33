import type { z } from 'zod';
import type { FleetCollection, FleetNode } from '../model/fleet';
import {
  FLEET_COLLECTIONS,
  ID_PATTERN,
  INHERIT_MODE_PATTERN,
  NODE_STATES,
  POLICY_MODES,
} from '../model/fleet';
import type { Json } from '../model/json';
import { hasControlCharacter, LIMITS } from './limits';

export type EntityParse =
  { readonly success: true; readonly data: object } | { readonly success: false; readonly error: z.ZodError };

/**
 * One entity of a collection as its schema reads it. A node in the plain shape (`plainNode`) is
 * read without the schema: nodes are nearly all of a fleet's entities, and an import or a snapshot
 * reads every one of them.
 */
export function parseEntity(collection: FleetCollection, element: unknown): EntityParse {
  if (collection === 'nodes') {
    const node = plainNode(element);
    if (node !== null) return { success: true, data: node };
  }
  return FLEET_COLLECTIONS[collection].safeParse(element, { reportInput: true });
}

const NODE_KEYS = new Set([
  'id',
  'hostname',
  'policyServer',
  'state',
  'facts',
  'properties',
  'inheritModes',
  'policyMode',
]);
const STATES: ReadonlySet<unknown> = new Set(NODE_STATES);
const MODES: ReadonlySet<unknown> = new Set(POLICY_MODES);

/**
 * The node `nodeSchema` parses a value into, told without the schema, or null when the value is
 * anything but plain: then the schema reads it and says what is wrong. Stricter than the schema,
 * never looser, and equal to its output, key order included (property tests): plain objects and
 * arrays only, finite numbers, no key left undefined, no `__proto__` key anywhere. The node's
 * facts and properties are the input's own objects, not copies: a validated fleet is never changed.
 */
export function plainNode(value: unknown): FleetNode | null {
  if (!isPlainObject(value)) return null;
  for (const key of Object.keys(value)) if (!NODE_KEYS.has(key) || value[key] === undefined) return null;
  const {
    id,
    hostname,
    policyServer = 'root',
    state = 'enabled',
    facts = {},
    properties = {},
    inheritModes,
    policyMode,
  } = value;
  if (
    !isId(id) ||
    !isHostname(hostname) ||
    !isId(policyServer) ||
    !STATES.has(state) ||
    !isJsonRecord(facts, 1) ||
    !isJsonRecord(properties, 1) ||
    (inheritModes !== undefined && !isInheritModes(inheritModes)) ||
    (policyMode !== undefined && !MODES.has(policyMode))
  )
    return null;
  const node = {
    id,
    hostname,
    policyServer,
    state: state as FleetNode['state'],
    facts,
    properties,
  } as { -readonly [K in keyof FleetNode]: FleetNode[K] };
  if (inheritModes !== undefined) node.inheritModes = inheritModes;
  if (policyMode !== undefined) node.policyMode = policyMode as FleetNode['policyMode'];
  return node;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    Object.getPrototypeOf(value) === Object.prototype &&
    !Object.hasOwn(value, '__proto__')
  );
}

function isId(value: unknown): value is string {
  return typeof value === 'string' && value.length <= LIMITS.maxIdLength && ID_PATTERN.test(value);
}

const WHITE_SPACE = /\s/;

function isHostname(value: unknown): value is string {
  return (
    typeof value === 'string' &&
    value.length >= 1 &&
    value.length <= 253 &&
    !hasControlCharacter(value) &&
    !WHITE_SPACE.test(value)
  );
}

function isInheritModes(value: unknown): value is Record<string, string> {
  if (!isPlainObject(value)) return false;
  for (const key of Object.keys(value)) {
    const mode = value[key];
    if (typeof mode !== 'string' || !INHERIT_MODE_PATTERN.test(mode)) return false;
  }
  return true;
}

/** Deeper than a document may be is left to the schema (and to the depth check before it). */
function isJsonRecord(value: unknown, depth: number): value is Record<string, Json> {
  if (!isPlainObject(value) || depth > LIMITS.maxDocumentDepth) return false;
  for (const key of Object.keys(value)) if (!isJson(value[key], depth + 1)) return false;
  return true;
}

function isJson(value: unknown, depth: number): boolean {
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
