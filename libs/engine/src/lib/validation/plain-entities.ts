import type { Criterion, Directive, Group } from '../model/fleet';
import { CRITERION_OPERATORS, POLICY_MODES } from '../model/fleet';
import { hasControlCharacter, LIMITS } from './limits';
import { isId, isInheritModes, isJson, isJsonRecord, isPlainObject } from './plain-json';

/*
 * Directives and groups read without their schemas, as `plainNode` reads nodes: the same rules
 * (plain objects and arrays only, finite numbers, no key left undefined, no `__proto__` key
 * anywhere; stricter than the schema, never looser, equal to its output with the same key order;
 * property tests), null for anything else, which the schema then reads and names.
 */

const DIRECTIVE_KEYS = new Set([
  'id',
  'name',
  'technique',
  'techniqueVersion',
  'priority',
  'enabled',
  'parameters',
  'policyMode',
  'before',
  'require',
  'notify',
  'subscribe',
]);
const GROUP_KEYS = new Set(['id', 'name', 'enabled', 'nodes', 'criteria', 'properties', 'inheritModes']);
const MODES: ReadonlySet<unknown> = new Set(POLICY_MODES);
const OPERATORS: ReadonlySet<unknown> = new Set(CRITERION_OPERATORS);

/** The directive `directiveSchema` parses a value into, or null when the value is anything but plain. */
export function plainDirective(value: unknown): Directive | null {
  if (!hasOnly(value, DIRECTIVE_KEYS)) return null;
  const {
    id,
    name,
    technique,
    techniqueVersion,
    priority = 5,
    enabled = true,
    parameters = {},
    policyMode,
    before = [],
    require = [],
    notify = [],
    subscribe = [],
  } = value;
  if (
    !isId(id) ||
    !isName(name) ||
    !isId(technique) ||
    (techniqueVersion !== undefined && typeof techniqueVersion !== 'string') ||
    !Number.isInteger(priority) ||
    (priority as number) < 0 ||
    (priority as number) > 10 ||
    typeof enabled !== 'boolean' ||
    !isJsonRecord(parameters, 1) ||
    (policyMode !== undefined && !MODES.has(policyMode)) ||
    !isIdList(before) ||
    !isIdList(require) ||
    !isIdList(notify) ||
    !isIdList(subscribe)
  )
    return null;
  const directive = { id, name, technique } as { -readonly [K in keyof Directive]: Directive[K] };
  if (techniqueVersion !== undefined) directive.techniqueVersion = techniqueVersion;
  directive.priority = priority as number;
  directive.enabled = enabled;
  directive.parameters = parameters;
  if (policyMode !== undefined) directive.policyMode = policyMode as Directive['policyMode'];
  directive.before = before;
  directive.require = require;
  directive.notify = notify;
  directive.subscribe = subscribe;
  return directive;
}

/** The group `groupSchema` parses a value into, or null when the value is anything but plain. */
export function plainGroup(value: unknown): Group | null {
  if (!hasOnly(value, GROUP_KEYS)) return null;
  const { id, name, enabled = true, nodes = [], criteria, properties = {}, inheritModes } = value;
  if (
    !isId(id) ||
    !isName(name) ||
    typeof enabled !== 'boolean' ||
    !isIdList(nodes) ||
    !isJsonRecord(properties, 1) ||
    (inheritModes !== undefined && !isInheritModes(inheritModes))
  )
    return null;
  const group = { id, name, enabled, nodes } as { -readonly [K in keyof Group]: Group[K] };
  if (criteria !== undefined) {
    const read = plainCriteria(criteria);
    if (read === null) return null;
    group.criteria = read;
  }
  group.properties = properties;
  if (inheritModes !== undefined) group.inheritModes = inheritModes;
  return group;
}

function plainCriteria(value: unknown): Group['criteria'] | null {
  if (!isPlainObject(value)) return null;
  const keys = Object.keys(value);
  if (keys.length !== 1) return null;
  const mode = keys[0] as string;
  const list = value[mode];
  if ((mode !== 'all' && mode !== 'any') || !isPlainArray(list)) return null;
  const criteria: Criterion[] = [];
  for (const criterion of list) {
    const read = plainCriterion(criterion);
    if (read === null) return null;
    criteria.push(read);
  }
  return mode === 'all' ? { all: criteria } : { any: criteria };
}

function plainCriterion(value: unknown): Criterion | null {
  if (!isPlainObject(value)) return null;
  const keys = Object.keys(value);
  for (const key of keys) if (value[key] === undefined) return null;
  if (keys.length === 1 && keys[0] === 'group')
    return isId(value['group']) ? { group: value['group'] } : null;
  const subject = 'fact' in value ? 'fact' : 'property';
  if (!keys.every((key) => key === subject || key === 'op' || key === 'value')) return null;
  const { op } = value;
  const named = value[subject];
  if (typeof named !== 'string' || named.length === 0 || !OPERATORS.has(op)) return null;
  if ('value' in value && !isJson(value['value'], 1)) return null;
  const criterion: Record<string, unknown> = { [subject]: named, op };
  if ('value' in value) criterion['value'] = value['value'];
  return criterion as Criterion;
}

function hasOnly(value: unknown, allowed: ReadonlySet<string>): value is Record<string, unknown> {
  if (!isPlainObject(value)) return false;
  for (const key of Object.keys(value)) if (!allowed.has(key) || value[key] === undefined) return false;
  return true;
}

function isName(value: unknown): value is string {
  return typeof value === 'string' && value.length <= LIMITS.maxNameLength && !hasControlCharacter(value);
}

function isPlainArray(value: unknown): value is unknown[] {
  if (!Array.isArray(value) || Object.getPrototypeOf(value) !== Array.prototype) return false;
  for (let index = 0; index < value.length; index++) if (!(index in value)) return false;
  return true;
}

function isIdList(value: unknown): value is string[] {
  return isPlainArray(value) && value.every(isId);
}
