import type { z } from 'zod';
import type { FleetCollection, FleetNode } from '../model/fleet';
import { FLEET_COLLECTIONS, NODE_STATES, POLICY_MODES } from '../model/fleet';
import { hasControlCharacter } from './limits';
import { plainDirective, plainGroup } from './plain-entities';
import { isId, isInheritModes, isJsonRecord, isPlainObject } from './plain-json';

export type EntityParse =
  { readonly success: true; readonly data: object } | { readonly success: false; readonly error: z.ZodError };

/**
 * One entity of a collection as its schema reads it. A node, directive or group in the plain shape
 * (`plainNode`, `plainDirective`, `plainGroup`) is read without the schema: they are nearly all of
 * a fleet's entities, and an import or a snapshot reads every one of them.
 */
export function parseEntity(collection: FleetCollection, element: unknown): EntityParse {
  const plain = PLAIN_READERS[collection]?.(element) ?? null;
  if (plain !== null) return { success: true, data: plain };
  return FLEET_COLLECTIONS[collection].safeParse(element, { reportInput: true });
}

/** The collections read without the schema when their entities are plain: the many of a fleet. */
const PLAIN_READERS: Partial<Record<FleetCollection, (value: unknown) => object | null>> = {
  nodes: plainNode,
  directives: plainDirective,
  groups: plainGroup,
};

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
