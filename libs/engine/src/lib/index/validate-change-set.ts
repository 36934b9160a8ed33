import { z } from 'zod';
import type { FleetCollection, Group, Relationship, Settings, Technique } from '../model/fleet';
import { FLEET_COLLECTIONS, settingsChangeSchema } from '../model/fleet';
import type { Json } from '../model/json';
import { isJsonObject } from '../model/json';
import type { PathSegment } from '../validation/json-path';
import { formatJsonPath } from '../validation/json-path';
import type { ReferenceView, Report, ValidationIssue } from '../validation/validate';
import {
  checkEntity,
  checkGroupCycles,
  entityKey,
  nestedTooDeep,
  parseParameters,
} from '../validation/validate';
import { LIMITS, tooDeep } from '../validation/limits';
import { parseEntity } from '../validation/plain-node';
import { toValidationIssues } from '../validation/zod-issues';
import type { ParsedChangeSet } from './change-set';
import { emptyChangeSet, ID_COLLECTIONS, relationshipKey } from './change-set';
import type { FleetIndex } from './fleet-index';
import { referencedGroups } from './membership';
import { groupReferences } from './targets';
import { mapList } from '../model/lists';

export type ChangeSetValidation =
  | { readonly ok: true; readonly change: ParsedChangeSet }
  | { readonly ok: false; readonly issues: readonly ValidationIssue[] };

const SECTIONS = new Set(['upsert', 'delete']);
const UPSERT_FIELDS = new Set([...Object.keys(FLEET_COLLECTIONS), 'parameters', 'settings']);
const DELETE_FIELDS = new Set([...Object.keys(FLEET_COLLECTIONS), 'parameters']);
const techniqueKeySchema = z.strictObject({ id: z.string(), version: z.string() });
const idSchema = z.string();

type Upserts = {
  -readonly [K in keyof ParsedChangeSet['upsert']]: ParsedChangeSet['upsert'][K] extends readonly (infer T)[]
    ? T[]
    : ParsedChangeSet['upsert'][K];
};
type Deletes = {
  -readonly [K in keyof ParsedChangeSet['delete']]: ParsedChangeSet['delete'][K] extends readonly (infer T)[]
    ? T[]
    : never;
};

/**
 * Checks a change set against the configuration it applies to: each entity with the fleet file's
 * schema, then every reference of the configuration it would give. Issues name the JSON path in the
 * change set; an existing entity a deletion breaks is named in the message of that deletion.
 */
export function validateChangeSet(input: unknown, state: FleetIndex): ChangeSetValidation {
  const issues: ValidationIssue[] = [];
  const report: Report = (path, message) => issues.push({ path: formatJsonPath(path), message });
  if (!isJsonObject(input as Json)) {
    return {
      ok: false,
      issues: [{ path: '$', message: 'a change set must be an object with upsert and/or delete' }],
    };
  }
  const deep = tooDeep(input, LIMITS.maxDocumentDepth);
  if (deep) return { ok: false, issues: [nestedTooDeep(deep)] };
  const raw = input as Record<string, unknown>;
  for (const key of Object.keys(raw))
    if (!SECTIONS.has(key)) report([key], 'unknown field (upsert or delete)');
  const upsertRaw = section(raw['upsert'], 'upsert', UPSERT_FIELDS, report);
  const deleteRaw = section(raw['delete'], 'delete', DELETE_FIELDS, report);

  const { upsert, delete: deletions } = emptyChangeSet() as unknown as { upsert: Upserts; delete: Deletes };
  const upsertPaths = new Map<object, PathSegment[]>();
  for (const collection of Object.keys(FLEET_COLLECTIONS) as FleetCollection[]) {
    const list = arrayAt(upsertRaw[collection], ['upsert', collection], report);
    const seen = new Map<string, number>();
    list.forEach((element, index) => {
      const path: PathSegment[] = ['upsert', collection, index];
      const result = parseEntity(collection, element);
      if (!result.success) {
        issues.push(...toValidationIssues(result.error.issues, path));
        return;
      }
      const key = entityKey(collection, result.data);
      const first = seen.get(key);
      if (first !== undefined) {
        report(
          [...path, 'id'],
          `duplicate ${collection.slice(0, -1)} ${key} (first at ${formatJsonPath(['upsert', collection, first])})`,
        );
        return;
      }
      seen.set(key, index);
      (upsert[collection] as object[]).push(result.data);
      upsertPaths.set(result.data, path);
    });
  }
  if (upsertRaw['settings'] !== undefined) {
    const result = settingsChangeSchema.safeParse(upsertRaw['settings'], { reportInput: true });
    if (result.success) upsert.settings = stripUndefined(result.data) as Partial<Settings>;
    else issues.push(...toValidationIssues(result.error.issues, ['upsert', 'settings']));
  }
  // Values are held to the limit the configuration will have: a change may raise it and use it.
  const maxValueBytes = upsert.settings?.maxValueBytes ?? state.settings.maxValueBytes;
  if (upsertRaw['parameters'] !== undefined)
    upsert.parameters = parseParameters(
      upsertRaw['parameters'],
      (path, message) => report(['upsert', ...path], message),
      maxValueBytes,
    );

  const deletePaths = new Map<string, PathSegment[]>();
  const parseDeletes = <T>(
    field: string,
    schema: z.ZodType<T>,
    keyOf: (value: T) => string,
    into: T[],
  ): void => {
    arrayAt(deleteRaw[field], ['delete', field], report).forEach((element, index) => {
      const path: PathSegment[] = ['delete', field, index];
      const result = schema.safeParse(element, { reportInput: true });
      if (!result.success) {
        issues.push(...toValidationIssues(result.error.issues, path));
        return;
      }
      const key = `${field}:${keyOf(result.data)}`;
      if (deletePaths.has(key)) return;
      deletePaths.set(key, path);
      into.push(result.data);
    });
  };
  parseDeletes('techniques', techniqueKeySchema, (key) => `${key.id}@${key.version}`, deletions.techniques);
  for (const collection of ID_COLLECTIONS)
    parseDeletes(collection, idSchema, (id) => id, deletions[collection]);
  parseDeletes('relationships', FLEET_COLLECTIONS.relationships, relationshipKey, deletions.relationships);
  parseDeletes('parameters', idSchema, (name) => name, deletions.parameters);
  if (issues.length > 0) return { ok: false, issues };

  const change: ParsedChangeSet = { upsert, delete: deletions };
  checkAgainstState(change, state, upsertPaths, deletePaths, report);
  return issues.length > 0 ? { ok: false, issues } : { ok: true, change };
}

function checkAgainstState(
  change: ParsedChangeSet,
  state: FleetIndex,
  upsertPaths: ReadonlyMap<object, PathSegment[]>,
  deletePaths: ReadonlyMap<string, PathSegment[]>,
  report: Report,
): void {
  const deleted = (field: string, key: string): boolean => deletePaths.has(`${field}:${key}`);
  const upserted = {} as Record<FleetCollection, Set<string>>;
  for (const collection of Object.keys(FLEET_COLLECTIONS) as FleetCollection[])
    upserted[collection] = new Set(
      (change.upsert[collection] as object[]).map((entity) => entityKey(collection, entity)),
    );

  // Deleting what does not exist, or deleting and upserting the same entity, is a mistake to report.
  const relationshipKeys = new Set(state.relationships.map(relationshipKey));
  for (const [key, path] of deletePaths) {
    const [field, id] = [key.slice(0, key.indexOf(':')), key.slice(key.indexOf(':') + 1)];
    const exists =
      field === 'techniques'
        ? state.techniques.get(id.slice(0, id.lastIndexOf('@')))?.has(id.slice(id.lastIndexOf('@') + 1))
        : field === 'relationships'
          ? relationshipKeys.has(id)
          : field === 'parameters'
            ? id in state.parameters
            : (
                state[field as 'directives' | 'rules' | 'groups' | 'nodes' | 'relays'] as ReadonlyMap<
                  string,
                  unknown
                >
              ).has(id);
    if (!exists) report(path, `no ${field.slice(0, -1)} ${id} to delete`);
    if (field !== 'parameters' && upserted[field as FleetCollection]?.has(id))
      report(path, `${field.slice(0, -1)} ${id} is both upserted and deleted`);
    if (field === 'parameters' && id in change.upsert.parameters)
      report(path, `parameter ${id} is both upserted and deleted`);
  }

  // Global parameters' inheritance modes name parameters of the configuration the change gives.
  const modes = change.upsert.settings.parameterInheritModes ?? state.settings.parameterInheritModes;
  for (const name of Object.keys(modes)) {
    const kept =
      (Object.hasOwn(state.parameters, name) && !deleted('parameters', name)) ||
      Object.hasOwn(change.upsert.parameters, name);
    if (kept) continue;
    if (change.upsert.settings.parameterInheritModes !== undefined)
      report(['upsert', 'settings', 'parameterInheritModes', name], `${name} is not a global parameter`);
    else
      report(
        deletePaths.get(`parameters:${name}`) ?? ['delete', 'parameters'],
        `parameter ${name} has an inheritance mode (settings.parameterInheritModes): change the settings in the same change set`,
      );
  }

  const techniqueVersions = (id: string): Technique[] => {
    const versions = new Map(state.techniques.get(id) ?? []);
    for (const version of versions.keys())
      if (deleted('techniques', `${id}@${version}`)) versions.delete(version);
    for (const technique of change.upsert.techniques)
      if (technique.id === id) versions.set(technique.version, technique);
    return [...versions.values()];
  };
  const known = (collection: FleetCollection, id: string): boolean => {
    if (collection === 'techniques') return techniqueVersions(id).length > 0;
    if (upserted[collection].has(id)) return true;
    if (deleted(collection, id)) return false;
    return (state[collection as 'directives'] as ReadonlyMap<string, unknown>).has(id);
  };
  const relayParents = new Map([...state.relays.values()].map((relay) => [relay.id, relay.policyServer]));
  for (const relay of change.upsert.relays) relayParents.set(relay.id, relay.policyServer);
  const view: ReferenceView = {
    known,
    techniqueVersions,
    relayParent: (id) => (deleted('relays', id) ? undefined : relayParents.get(id)),
    maxValueBytes: change.upsert.settings?.maxValueBytes ?? state.settings.maxValueBytes,
  };

  for (const collection of Object.keys(FLEET_COLLECTIONS) as FleetCollection[]) {
    for (const entity of change.upsert[collection] as object[])
      checkEntity(collection, entity, upsertPaths.get(entity) as PathSegment[], view, report);
  }

  // Existing entities that name a deleted entity, or a technique whose versions change.
  const recheck = (
    collection: FleetCollection,
    entity: { id: string } | Relationship,
    cause: PathSegment[],
  ): void => {
    const name =
      collection === 'relationships'
        ? relationshipKey(entity as Relationship)
        : (entity as { id: string }).id;
    if (deleted(collection, name) || upserted[collection].has(name)) return;
    checkEntity(collection, entity, [], view, (path, message) =>
      report(cause, `${collection}[${name}]${formatJsonPath(path).slice(1)}: ${message}`),
    );
  };
  const causes = (field: string): [string, PathSegment[]][] =>
    mapList(
      [...deletePaths].filter(([key]) => key.startsWith(`${field}:`)),
      ([key, path]) => [key.slice(field.length + 1), path],
    );

  const techniquesTouched = new Map<string, PathSegment[]>();
  for (const [key, path] of causes('techniques'))
    techniquesTouched.set(key.slice(0, key.lastIndexOf('@')), path);
  for (const technique of change.upsert.techniques)
    techniquesTouched.set(technique.id, upsertPaths.get(technique) as PathSegment[]);
  if (techniquesTouched.size > 0) {
    for (const directive of state.directives.values()) {
      const cause = techniquesTouched.get(directive.technique);
      if (cause) recheck('directives', directive, cause);
    }
  }
  const deletedDirectives = new Map(causes('directives'));
  if (deletedDirectives.size > 0) {
    for (const [directiveId, path] of deletedDirectives) {
      for (const ruleId of state.rulesOfDirective.get(directiveId) ?? [])
        recheck('rules', state.rules.get(ruleId) as { id: string }, path);
      for (const relationship of state.relationshipsOf.get(directiveId) ?? [])
        recheck('relationships', relationship, path);
    }
    for (const directive of state.directives.values()) {
      const named = [...directive.before, ...directive.require, ...directive.notify, ...directive.subscribe];
      const cause = mapList(named, (id) => deletedDirectives.get(id)).find((path) => path !== undefined);
      if (cause) recheck('directives', directive, cause);
    }
  }
  const deletedGroups = new Map(causes('groups'));
  if (deletedGroups.size > 0) {
    for (const rule of state.rules.values()) {
      const cause = mapList(groupReferences(rule.targets), (id) => deletedGroups.get(id)).find(
        (path) => path !== undefined,
      );
      if (cause) recheck('rules', rule, cause);
    }
    for (const group of state.groups.values()) {
      const cause = mapList(referencedGroups(group), (id) => deletedGroups.get(id)).find(
        (path) => path !== undefined,
      );
      if (cause) recheck('groups', group, cause);
    }
  }
  const deletedNodes = new Map(causes('nodes'));
  if (deletedNodes.size > 0) {
    for (const group of state.groups.values()) {
      const cause = mapList(group.nodes, (id) => deletedNodes.get(id)).find((path) => path !== undefined);
      if (cause) recheck('groups', group, cause);
    }
  }
  const deletedRelays = new Map(causes('relays'));
  if (deletedRelays.size > 0) {
    for (const node of state.nodes.values()) {
      const cause = deletedRelays.get(node.policyServer);
      if (cause) recheck('nodes', node, cause);
    }
    for (const relay of state.relays.values()) {
      const cause = deletedRelays.get(relay.policyServer);
      if (cause) recheck('relays', relay, cause);
    }
    for (const rule of state.rules.values()) {
      const cause = [...deletedRelays].find(([id]) =>
        JSON.stringify(rule.targets).includes(`"policyServer:${id}"`),
      )?.[1];
      if (cause) recheck('rules', rule, cause);
    }
  }

  if (change.upsert.groups.length > 0 && !keepsGroupsAcyclic(change, state)) {
    const groups = new Map<string, Group>(state.groups);
    for (const groupId of change.delete.groups) groups.delete(groupId);
    for (const group of change.upsert.groups) groups.set(group.id, group);
    checkGroupCycles(
      [...groups.values()],
      (group) => [...(upsertPaths.get(group) ?? ['groups', group.id]), 'criteria'],
      report,
    );
  }
}

/**
 * Whether the groups stay acyclic for sure, so that looking for a cycle through every group would
 * find none: they were, and every group upserted already was and names no group it did not name.
 * Every reference is then one the configuration had, and a deletion only takes references away.
 */
function keepsGroupsAcyclic(change: ParsedChangeSet, state: FleetIndex): boolean {
  if (!state.groupsAcyclic) return false;
  return change.upsert.groups.every((group) => {
    const before = state.groups.get(group.id);
    if (!before) return false;
    const named = new Set(referencedGroups(before));
    return referencedGroups(group).every((reference) => named.has(reference));
  });
}

function section(
  value: unknown,
  name: string,
  fields: ReadonlySet<string>,
  report: Report,
): Record<string, unknown> {
  if (value === undefined) return {};
  if (!isJsonObject(value as Json)) {
    report([name], 'expected an object of collections');
    return {};
  }
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) if (!fields.has(key)) report([name, key], 'unknown field');
  return record;
}

function arrayAt(value: unknown, path: PathSegment[], report: Report): unknown[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    report(path, 'expected an array');
    return [];
  }
  return value;
}

function stripUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, inner]) => inner !== undefined)) as T;
}
