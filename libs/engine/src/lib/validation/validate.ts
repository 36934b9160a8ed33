import type { YAMLParseError } from 'yaml';
import { parse as parseYaml } from 'yaml';
import type {
  Criterion,
  Directive,
  Fleet,
  FleetCollection,
  FleetNode,
  Group,
  Relationship,
  Relay,
  Rule,
  Settings,
  Target,
  Technique,
} from '../model/fleet';
import { FLEET_COLLECTIONS, ORDERING_MODES, PROPERTY_NAME_PATTERN, settingsSchema } from '../model/fleet';
import type { Json } from '../model/json';
import { isJsonObject } from '../model/json';
import { DATA_DOLLAR, TECHNIQUE_CLASSES_BODIES } from '../render/cfengine';
import { compareCodeUnits } from '../text/compare';
import type { PathSegment } from './json-path';
import { formatJsonPath } from './json-path';
import { toValidationIssues } from './zod-issues';
import { checkValueLimits, LIMITS, tooDeep } from './limits';
import { parseEntity } from './plain-node';

/** One problem of the input, at a JSON path like `$.directives[2].technique`. */
export interface ValidationIssue {
  readonly path: string;
  readonly message: string;
}

export type ValidationResult =
  | { readonly ok: true; readonly fleet: Fleet }
  | { readonly ok: false; readonly issues: readonly ValidationIssue[] };

export type FleetFormat = 'json' | 'yaml';

const TOP_LEVEL_FIELDS = new Set(['settings', 'parameters', ...Object.keys(FLEET_COLLECTIONS)]);
const TEMPLATE_REFERENCE = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;
export const ORDERING_PROPERTY = 'policygen_ordering';

/** Parses fleet text (JSON or YAML) and validates it; a syntax error is an issue like any other. */
export function loadFleet(text: string, format: FleetFormat): ValidationResult {
  let parsed: unknown;
  try {
    parsed =
      format === 'json' ? JSON.parse(text) : parseYaml(text, { prettyErrors: false, uniqueKeys: true });
  } catch (error) {
    const position = (error as Partial<YAMLParseError>).pos;
    const where = format === 'yaml' && position ? ` at ${lineAndColumn(text, position[0])}` : '';
    return {
      ok: false,
      issues: [
        { path: '$', message: `not valid ${format.toUpperCase()}${where}: ${(error as Error).message}` },
      ],
    };
  }
  return validateFleet(parsed);
}

function lineAndColumn(text: string, offset: number): string {
  const before = text.slice(0, offset).split('\n');
  return `line ${before.length}, column ${(before[before.length - 1] ?? '').length + 1}`;
}

/** Validates a parsed fleet file in one pass, reporting every issue with its JSON path. */
export function validateFleet(input: unknown): ValidationResult {
  const issues: ValidationIssue[] = [];
  const report = (path: readonly PathSegment[], message: string): void => {
    issues.push({ path: formatJsonPath(path), message });
  };
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return { ok: false, issues: [{ path: '$', message: 'a fleet file must be a JSON/YAML object' }] };
  }
  const deep = tooDeep(input, LIMITS.maxDocumentDepth);
  if (deep) return { ok: false, issues: [nestedTooDeep(deep)] };
  const raw = input as Record<string, unknown>;
  for (const key of Object.keys(raw)) if (!TOP_LEVEL_FIELDS.has(key)) report([key], 'unknown field');

  const settingsResult = settingsSchema.safeParse(raw['settings'] ?? {}, { reportInput: true });
  if (!settingsResult.success) issues.push(...toValidationIssues(settingsResult.error.issues, ['settings']));
  const settings: Settings = settingsResult.success ? settingsResult.data : settingsSchema.parse({});

  const parameters = parseParameters(raw['parameters'], report, settings.maxValueBytes);
  checkInheritModes(
    settings.parameterInheritModes,
    parameters,
    ['settings', 'parameterInheritModes'],
    report,
  );
  const parsed = parseCollections(raw, issues, report);
  checkReferences(parsed, report, settings.maxValueBytes);

  if (issues.length > 0) return { ok: false, issues };
  return { ok: true, fleet: { settings, parameters, ...(parsed.entities as ParsedEntities) } };
}

type ParsedEntities = {
  -readonly [K in FleetCollection]: Fleet[K] extends readonly (infer T)[] ? T[] : never;
};

interface ParsedCollections {
  /** The entities that parsed, with their index in the input. */
  readonly entities: ParsedEntities;
  readonly indexOf: Map<object, number>;
  /** Ids present in the input, parsed or not: a reference to a broken entity is not also dangling. */
  readonly rawIds: Readonly<Record<FleetCollection, ReadonlySet<string>>>;
}

export type Report = (path: readonly PathSegment[], message: string) => void;

export function parseParameters(value: unknown, report: Report, maxValueBytes: number): Record<string, Json> {
  if (value === undefined) return {};
  if (!isJsonObject(value as Json)) {
    report(['parameters'], 'expected an object of parameter name to value');
    return {};
  }
  const parameters = value as Record<string, Json>;
  checkCarriable(parameters, ['parameters'], report);
  checkValueLimits(parameters, ['parameters'], report, maxValueBytes);
  for (const name of Object.keys(parameters)) {
    if (!PROPERTY_NAME_PATTERN.test(name))
      report(['parameters', name], 'parameter names must match ^[a-zA-Z0-9][a-zA-Z0-9_]*$');
  }
  checkOrderingProperty(parameters, ['parameters'], report);
  return parameters;
}

function parseCollections(
  raw: Record<string, unknown>,
  issues: ValidationIssue[],
  report: Report,
): ParsedCollections {
  const entities = {} as Record<FleetCollection, unknown[]>;
  const rawIds = {} as Record<FleetCollection, Set<string>>;
  const indexOf = new Map<object, number>();
  for (const collection of Object.keys(FLEET_COLLECTIONS) as FleetCollection[]) {
    entities[collection] = [];
    rawIds[collection] = new Set();
    const value = raw[collection];
    if (value === undefined) continue;
    if (!Array.isArray(value)) {
      report([collection], 'expected an array');
      continue;
    }
    value.forEach((element: unknown, index) => {
      const elementId = (element as { id?: unknown } | null)?.id;
      if (typeof elementId === 'string') rawIds[collection].add(elementId);
      const result = parseEntity(collection, element);
      if (!result.success) {
        issues.push(...toValidationIssues(result.error.issues, [collection, index]));
        return;
      }
      entities[collection].push(result.data);
      indexOf.set(result.data, index);
    });
  }
  return { entities: entities as unknown as ParsedEntities, indexOf, rawIds };
}

function checkReferences(parsed: ParsedCollections, report: Report, maxValueBytes: number): void {
  const { entities, indexOf, rawIds } = parsed;
  const at = (collection: FleetCollection, entity: object, ...rest: PathSegment[]): PathSegment[] => [
    collection,
    indexOf.get(entity) ?? 0,
    ...rest,
  ];

  // Duplicates: techniques are keyed by id and version, everything else by id.
  for (const collection of ['techniques', 'directives', 'rules', 'groups', 'nodes', 'relays'] as const) {
    const seen = new Map<string, object>();
    for (const entity of entities[collection] as { id: string }[]) {
      const key = entityKey(collection, entity);
      const first = seen.get(key);
      if (first) {
        report(
          at(collection, entity, 'id'),
          `duplicate ${collection.slice(0, -1)} ${key} (first at ${formatJsonPath(at(collection, first))})`,
        );
      } else {
        seen.set(key, entity);
      }
    }
  }

  const techniqueVersions = new Map<string, Technique[]>();
  for (const technique of entities.techniques)
    techniqueVersions.set(technique.id, [...(techniqueVersions.get(technique.id) ?? []), technique]);
  const relayParent = new Map(entities.relays.map((relay) => [relay.id, relay.policyServer]));
  const view: ReferenceView = {
    known: (collection, id) => rawIds[collection].has(id),
    techniqueVersions: (id) => techniqueVersions.get(id),
    relayParent: (id) => relayParent.get(id),
    maxValueBytes,
  };
  for (const collection of Object.keys(FLEET_COLLECTIONS) as FleetCollection[]) {
    for (const entity of entities[collection])
      checkEntity(collection, entity, at(collection, entity), view, report);
  }
  checkGroupCycles(entities.groups, (group) => at('groups', group, 'criteria'), report);
}

/** How the validator sees the rest of the configuration while it checks one entity. */
export interface ReferenceView {
  /** Whether an entity of that id exists (parsed or not: a reference to a broken one is not dangling). */
  known(collection: FleetCollection, id: string): boolean;
  techniqueVersions(id: string): readonly Technique[] | undefined;
  relayParent(id: string): string | undefined;
  /** The configuration's `settings.maxValueBytes` (after the change, for a change set). */
  readonly maxValueBytes: number;
}

/** The key a collection's entities are unique by: techniques by id and version, others by id. */
export function entityKey(collection: FleetCollection, entity: object): string {
  if (collection === 'techniques') return `${(entity as Technique).id}@${(entity as Technique).version}`;
  if (collection === 'relationships') {
    const relationship = entity as Relationship;
    return `${relationship.from} ${relationship.kind} ${relationship.to}`;
  }
  return (entity as { id: string }).id;
}

/**
 * Text CFEngine cannot carry, anywhere in a value (keys included): a NUL ends a string in its C
 * code (`cf-promises` fails the node's whole policy on it), and a lone UTF-16 surrogate has no
 * UTF-8 form for the files the agent reads. Every other character reaches the agent exactly.
 */
export function checkCarriable(value: Json, path: readonly PathSegment[], report: Report): void {
  carriableWalk(value, [...path], report);
}

/** `checkCarriable` on one path array, grown and shrunk as it goes down and up; copied only to report. */
function carriableWalk(value: Json, path: PathSegment[], report: Report): void {
  if (typeof value === 'string') {
    const problem = uncarriable(value);
    if (problem) report([...path], problem);
  } else if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      path.push(index);
      carriableWalk(value[index] as Json, path, report);
      path.pop();
    }
  } else if (isJsonObject(value)) {
    for (const key of Object.keys(value)) {
      path.push(key);
      const problem = uncarriable(key);
      if (problem) report([...path], `its name ${problem}`);
      carriableWalk(value[key] as Json, path, report);
      path.pop();
    }
  }
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function uncarriable(text: string): string | undefined {
  // One look at each unit first: nearly every text has none of the three, each a scan of its own.
  if (!mayBeUncarriable(text)) return undefined;
  if (text.includes('\u0000')) return 'must not contain NUL (\\u0000): CFEngine cannot carry it';
  if (text.includes(DATA_DOLLAR)) return 'must not contain U+FDD0, a noncharacter policygen uses internally';
  if (LONE_SURROGATE.test(text)) return 'must be valid Unicode (a lone surrogate has no UTF-8 form)';
  return undefined;
}

const DATA_DOLLAR_UNIT = DATA_DOLLAR.charCodeAt(0);

/** Whether a text holds a NUL, U+FDD0 or any surrogate: false means it is carriable. */
function mayBeUncarriable(text: string): boolean {
  for (let index = 0; index < text.length; index++) {
    const unit = text.charCodeAt(index);
    if (unit === 0 || unit === DATA_DOLLAR_UNIT || (unit >= 0xd800 && unit <= 0xdfff)) return true;
  }
  return false;
}

/** Checks one parsed entity's references and rules beyond its schema. */
export function checkEntity(
  collection: FleetCollection,
  entity: object,
  path: PathSegment[],
  view: ReferenceView,
  report: Report,
): void {
  const isPolicyServer = (id: string): boolean => id === 'root' || view.known('relays', id);
  checkCarriable(entity as Json, path, report);
  switch (collection) {
    case 'techniques':
      checkTechnique(entity as Technique, path, report);
      return;
    case 'directives':
      checkDirective(entity as Directive, path, view, report);
      checkValueLimits((entity as Directive).parameters, [...path, 'parameters'], report, view.maxValueBytes);
      return;
    case 'relationships': {
      const relationship = entity as Relationship;
      for (const end of ['from', 'to'] as const) {
        if (!view.known('directives', relationship[end]))
          report([...path, end], `unknown directive ${relationship[end]}`);
      }
      return;
    }
    case 'rules': {
      const rule = entity as Rule;
      rule.directives.forEach((directiveId, index) => {
        if (!view.known('directives', directiveId))
          report([...path, 'directives', index], `unknown directive ${directiveId}`);
      });
      checkTarget(rule.targets, [...path, 'targets'], view.known, isPolicyServer, report);
      return;
    }
    case 'groups': {
      const group = entity as Group;
      group.nodes.forEach((nodeId, index) => {
        if (!view.known('nodes', nodeId)) report([...path, 'nodes', index], `unknown node ${nodeId}`);
      });
      const criteria = group.criteria;
      if (criteria) {
        const [mode, list] =
          'all' in criteria ? (['all', criteria.all] as const) : (['any', criteria.any] as const);
        list.forEach((criterion, index) =>
          checkCriterion(criterion, [...path, 'criteria', mode, index], view.known, report),
        );
      }
      checkProperties(group.properties, [...path, 'properties'], report);
      checkValueLimits(group.properties, [...path, 'properties'], report, view.maxValueBytes);
      checkInheritModes(group.inheritModes ?? {}, group.properties, [...path, 'inheritModes'], report);
      return;
    }
    case 'nodes': {
      const node = entity as FleetNode;
      // The agent holds it in a variable, whose value it expands again at each use.
      if (node.hostname.includes('$'))
        report([...path, 'hostname'], 'must not contain $ (a host name is letters, digits, - and .)');
      if (!isPolicyServer(node.policyServer))
        report([...path, 'policyServer'], `unknown policy server ${node.policyServer} (root or a relay id)`);
      checkProperties(node.properties, [...path, 'properties'], report);
      checkValueLimits(node.properties, [...path, 'properties'], report, view.maxValueBytes);
      checkValueLimits(node.facts, [...path, 'facts'], report, view.maxValueBytes);
      checkInheritModes(node.inheritModes ?? {}, node.properties, [...path, 'inheritModes'], report);
      return;
    }
    case 'relays': {
      const relay = entity as Relay;
      if (relay.id === 'root') report([...path, 'id'], 'root is the top of the relay tree, not a relay');
      if (!isPolicyServer(relay.policyServer)) {
        report([...path, 'policyServer'], `unknown policy server ${relay.policyServer} (root or a relay id)`);
        return;
      }
      const chain = [relay.id];
      for (let parent = relay.policyServer; parent !== 'root'; parent = view.relayParent(parent) ?? 'root') {
        if (chain.includes(parent)) {
          report([...path, 'policyServer'], `relay cycle: ${[...chain, parent].join(' -> ')}`);
          break;
        }
        chain.push(parent);
      }
      return;
    }
  }
}

/** The issue of a document nested too deep: the only one, since nothing else of it is read. */
export function nestedTooDeep(path: readonly PathSegment[]): ValidationIssue {
  return {
    path: formatJsonPath(path),
    message: `is nested more than ${LIMITS.maxDocumentDepth} levels deep in the document: it was not read further`,
  };
}

/** An inheritance mode belongs to a property the same level sets (Rudder keeps it with the value). */
export function checkInheritModes(
  modes: Readonly<Record<string, string>>,
  properties: Readonly<Record<string, Json>>,
  path: PathSegment[],
  report: Report,
): void {
  for (const name of Object.keys(modes))
    if (!Object.hasOwn(properties, name))
      report([...path, name], `${name} is not set at this level: a mode goes with the value it combines`);
}

function checkDirective(
  directive: Directive,
  path: PathSegment[],
  view: ReferenceView,
  report: Report,
): void {
  const versions = view.techniqueVersions(directive.technique);
  if (!versions || versions.length === 0) {
    if (!view.known('techniques', directive.technique))
      report([...path, 'technique'], `unknown technique ${directive.technique}`);
  } else {
    let technique: Technique | undefined;
    if (directive.techniqueVersion !== undefined) {
      technique = versions.find((candidate) => candidate.version === directive.techniqueVersion);
      if (!technique) {
        report(
          [...path, 'techniqueVersion'],
          `technique ${directive.technique} has no version ${directive.techniqueVersion} (it has ${versions.map((v) => v.version).join(', ')})`,
        );
      }
    } else if (versions.length > 1) {
      report(
        [...path, 'techniqueVersion'],
        `required: technique ${directive.technique} has versions ${versions
          .map((v) => v.version)
          .sort(compareCodeUnits)
          .join(', ')}`,
      );
    } else {
      technique = versions[0];
    }
    if (technique) {
      const declared = new Set(technique.parameters.map((parameter) => parameter.name));
      for (const name of Object.keys(directive.parameters)) {
        if (!declared.has(name)) {
          report(
            [...path, 'parameters', name],
            `technique ${technique.id} ${technique.version} has no parameter ${name}`,
          );
        }
      }
    }
  }
  for (const relation of ['before', 'require', 'notify', 'subscribe'] as const) {
    directive[relation].forEach((target, index) => {
      if (!view.known('directives', target))
        report([...path, relation, index], `unknown directive ${target}`);
    });
  }
}

/** Bundle names of the system bundles; a technique's policy bundle must not take one. */
const RESERVED_TECHNIQUE_IDS = new Set(['node', 'policygen_node', 'policygen_properties']);

/**
 * Words CFEngine 3.21 refuses as a bundle name (its special variable contexts and its grammar's
 * keywords; `cf-promises` says "reserved container name" or fails to parse). A technique id names
 * its policy's bundle, a parameter a bundle's argument: both are refused rather than renamed, so
 * that the bundle a user reads in the tree is the one they named.
 */
export const CFENGINE_RESERVED_WORDS: ReadonlySet<string> = new Set([
  'sys',
  'const',
  'this',
  'mon',
  'match',
  'edit',
  'bundle',
  'body',
  'promise',
]);

function checkTechnique(technique: Technique, path: PathSegment[], report: Report): void {
  if (RESERVED_TECHNIQUE_IDS.has(technique.id))
    report([...path, 'id'], `${technique.id} is reserved for a system bundle`);
  if (CFENGINE_RESERVED_WORDS.has(technique.id))
    report([...path, 'id'], `${technique.id} is a reserved word of CFEngine: it cannot name a bundle`);
  const names = new Set<string>();
  technique.parameters.forEach((parameter, index) => {
    if (names.has(parameter.name))
      report([...path, 'parameters', index, 'name'], `duplicate parameter ${parameter.name}`);
    if (CFENGINE_RESERVED_WORDS.has(parameter.name))
      report(
        [...path, 'parameters', index, 'name'],
        `${parameter.name} is a reserved word of CFEngine: it cannot name a bundle parameter`,
      );
    names.add(parameter.name);
  });
  for (const list of ['promises', 'refresh'] as const) {
    technique[list].forEach((promise, index) => {
      if (promise.attributes['action'] !== undefined)
        report(
          [...path, list, index, 'attributes', 'action'],
          'is set by the generated tree itself (policygen_audit, for directives in audit mode): a technique cannot set it',
        );
      const classes = promise.attributes['classes'];
      if (classes !== undefined && !isTechniqueClassesCall(classes))
        report(
          [...path, list, index, 'attributes', 'classes'],
          'must call policygen_if_repaired(class) or policygen_classes(repaired, failed) (comma-separated ' +
            'class lists): the generated tree defines no other classes body',
        );
      const texts: [PathSegment[], string][] = [[['promiser'], promise.promiser]];
      for (const [name, value] of Object.entries(promise.attributes)) {
        if (typeof value === 'string') texts.push([['attributes', name], value]);
        else if (Array.isArray(value))
          value.forEach((item, i) => texts.push([['attributes', name, i], item]));
        else if (typeof value === 'object')
          value.args.forEach((item, i) => texts.push([['attributes', name, 'args', i], item]));
      }
      for (const [where, text] of texts) {
        for (const match of text.matchAll(TEMPLATE_REFERENCE)) {
          const name = match[1] as string;
          if (!names.has(name))
            report([...path, list, index, ...where], `{{${name}}} names no parameter of the technique`);
        }
      }
    });
  }
}

function isTechniqueClassesCall(value: Technique['promises'][number]['attributes'][string]): boolean {
  if (typeof value !== 'object' || Array.isArray(value)) return false;
  const [ifRepaired, classes] = TECHNIQUE_CLASSES_BODIES;
  return (
    (value.call === ifRepaired && value.args.length === 1) ||
    (value.call === classes && value.args.length === 2)
  );
}

function checkTarget(
  target: Target,
  path: PathSegment[],
  known: (collection: FleetCollection, id: string) => boolean,
  isPolicyServer: (id: string) => boolean,
  report: Report,
): void {
  if (typeof target === 'string') {
    if (target.startsWith('group:') && !known('groups', target.slice(6)))
      report(path, `unknown group ${target.slice(6)}`);
    if (target.startsWith('policyServer:') && !isPolicyServer(target.slice(13))) {
      report(path, `unknown policy server ${target.slice(13)} (root or a relay id)`);
    }
    return;
  }
  if (Array.isArray(target)) {
    target.forEach((inner: Target, index) =>
      checkTarget(inner, [...path, index], known, isPolicyServer, report),
    );
    return;
  }
  const composite = target as Exclude<Target, string | readonly Target[]>;
  if ('or' in composite)
    composite.or.forEach((inner, index) =>
      checkTarget(inner, [...path, 'or', index], known, isPolicyServer, report),
    );
  else if ('and' in composite)
    composite.and.forEach((inner, index) =>
      checkTarget(inner, [...path, 'and', index], known, isPolicyServer, report),
    );
  else {
    checkTarget(composite.include, [...path, 'include'], known, isPolicyServer, report);
    if (composite.exclude !== undefined)
      checkTarget(composite.exclude, [...path, 'exclude'], known, isPolicyServer, report);
  }
}

function checkCriterion(
  criterion: Criterion,
  path: PathSegment[],
  known: (collection: FleetCollection, id: string) => boolean,
  report: Report,
): void {
  if ('group' in criterion) {
    if (!known('groups', criterion.group)) report([...path, 'group'], `unknown group ${criterion.group}`);
    return;
  }
  const { op, value } = criterion;
  if (op === 'exists' || op === 'notExists') {
    if (value !== undefined) report([...path, 'value'], `${op} takes no value`);
  } else if (value === undefined) {
    report([...path, 'value'], `${op} needs a value`);
  } else if (op === 'in' && !Array.isArray(value)) {
    report([...path, 'value'], 'in needs a list of values');
  } else if (op === 'regex') {
    if (typeof value !== 'string') report([...path, 'value'], 'regex needs a string');
    else {
      try {
        new RegExp(value);
      } catch (error) {
        report([...path, 'value'], `not a valid regular expression: ${(error as Error).message}`);
      }
    }
  } else if (
    ['lt', 'le', 'gt', 'ge'].includes(op) &&
    typeof value !== 'number' &&
    typeof value !== 'string'
  ) {
    report([...path, 'value'], `${op} needs a number or a dotted version`);
  }
}

export function checkProperties(properties: Record<string, Json>, path: PathSegment[], report: Report): void {
  for (const name of Object.keys(properties)) {
    if (!PROPERTY_NAME_PATTERN.test(name))
      report([...path, name], 'property names (namespaces) must match ^[a-zA-Z0-9][a-zA-Z0-9_]*$');
  }
  checkOrderingProperty(properties, path, report);
}

export function checkOrderingProperty(
  properties: Record<string, Json>,
  path: PathSegment[],
  report: Report,
): void {
  const value = properties[ORDERING_PROPERTY];
  if (value !== undefined && !(ORDERING_MODES as readonly Json[]).includes(value)) {
    report([...path, ORDERING_PROPERTY], `must be one of ${ORDERING_MODES.join(', ')}`);
  }
}

/** Group membership through `{group: id}` criteria must not loop; each cycle is named once. */
export function checkGroupCycles(
  groups: readonly Group[],
  pathOf: (group: Group) => PathSegment[],
  report: Report,
): void {
  const byId = new Map(groups.map((group) => [group.id, group]));
  const references = (group: Group): string[] => {
    const list = group.criteria ? ('all' in group.criteria ? group.criteria.all : group.criteria.any) : [];
    return list.flatMap((criterion) =>
      'group' in criterion && byId.has(criterion.group) ? [criterion.group] : [],
    );
  };
  const state = new Map<string, 'visiting' | 'done'>();
  const reported = new Set<string>();
  const visit = (id: string, stack: string[]): void => {
    state.set(id, 'visiting');
    for (const next of references(byId.get(id) as Group)) {
      if (state.get(next) === 'visiting') {
        const cycle = [...stack.slice(stack.indexOf(next)), next];
        const key = [...cycle.slice(0, -1)].sort(compareCodeUnits).join(',');
        if (!reported.has(key)) {
          reported.add(key);
          report(pathOf(byId.get(next) as Group), `group membership cycle: ${cycle.join(' -> ')}`);
        }
      } else if (!state.has(next)) {
        visit(next, [...stack, next]);
      }
    }
    state.set(id, 'done');
  };
  for (const id of [...byId.keys()].sort(compareCodeUnits)) if (!state.has(id)) visit(id, [id]);
}
