import type { CompiledFleet } from '../index/fleet-index';
import type { NodeError } from '../generate/types';
import type { FleetNode, Group } from '../model/fleet';
import type { Json, JsonObject } from '../model/json';
import { isJsonObject, jsonEqual } from '../model/json';
import { compareCodeUnits } from '../text/compare';

export type PropertySource =
  | { readonly source: 'global' }
  | { readonly source: 'group'; readonly groupId: string }
  | { readonly source: 'node' };

/** One level's contribution to a property. */
export interface PropertyLayer {
  readonly from: PropertySource;
  readonly value: Json;
}

export interface InheritedProperties {
  readonly properties: JsonObject;
  /** Property name → the levels that set it, least specific first. */
  readonly layers: ReadonlyMap<string, readonly PropertyLayer[]>;
  readonly errors: readonly NodeError[];
}

/** Rudder's default merge of two levels: objects key by key, recursively; anything else replaces. */
export function mergeValues(lessSpecific: Json, moreSpecific: Json): Json {
  if (!isJsonObject(lessSpecific) || !isJsonObject(moreSpecific)) return moreSpecific;
  const merged: JsonObject = { ...lessSpecific };
  for (const [key, value] of Object.entries(moreSpecific)) {
    merged[key] = key in lessSpecific ? mergeValues(lessSpecific[key] as Json, value) : value;
  }
  return merged;
}

/** Global parameters and a set of groups, merged: every level below the node's own. */
export interface GroupLevels {
  /** Property name → the levels that set it, least specific first (global, then groups). */
  readonly layers: ReadonlyMap<string, readonly PropertyLayer[]>;
  readonly merged: ReadonlyMap<string, Json>;
  /** One PROPERTY_CONFLICT per property two unrelated groups disagree on, by property name. */
  readonly conflicts: readonly NodeError[];
}

/** The enabled groups of a node, parents before children, then by id: the order levels apply in. */
export function levelGroups(compiled: CompiledFleet, groupIds: readonly string[]): Group[] {
  const groups: Group[] = [];
  let ordered = true;
  let nested = false;
  for (const groupId of groupIds) {
    const group = compiled.groups.get(groupId) as Group;
    if (!group.enabled) continue;
    const previous = groups[groups.length - 1];
    if (previous && compareCodeUnits(previous.id, group.id) > 0) ordered = false;
    if (!nested && (compiled.ancestors.get(groupId)?.size ?? 0) > 0) nested = true;
    groups.push(group);
  }
  // Most nodes are in no subgroup, and their groups come sorted by id: nothing to sort then.
  if (ordered && !nested) return groups;
  const depth = (group: Group): number => compiled.ancestors.get(group.id)?.size ?? 0;
  return groups.sort((a, b) => depth(a) - depth(b) || compareCodeUnits(a.id, b.id));
}

/** Global parameters then the given groups (from `levelGroups`), merged and checked for conflicts. */
export function groupLevels(
  compiled: CompiledFleet,
  groups: readonly Group[],
  keepLayers = true,
): GroupLevels {
  const layers = new Map<string, PropertyLayer[]>();
  const add = (from: PropertySource, values: Readonly<Record<string, Json>>): void => {
    for (const name of Object.keys(values)) {
      const layer = { from, value: values[name] as Json };
      const stack = layers.get(name);
      if (stack) stack.push(layer);
      else layers.set(name, [layer]);
    }
  };
  add(GLOBAL_SOURCE, compiled.parameters);
  for (const group of groups) add({ source: 'group', groupId: group.id }, group.properties);
  const conflicts: { readonly name: string; readonly error: NodeError }[] = [];
  const merged = new Map<string, Json>();
  // Names in code-unit order where the order shows (layers kept for explain); conflicts always.
  const names = keepLayers ? [...layers.keys()].sort(compareCodeUnits) : layers.keys();
  for (const name of names) {
    const stack = layers.get(name) as PropertyLayer[];
    if (stack.length === 1) {
      merged.set(name, (stack[0] as PropertyLayer).value);
      continue;
    }
    const conflict = groupConflict(compiled, stack);
    if (conflict)
      conflicts.push({ name, error: { ...conflict, message: conflict.message.replace('%s', name) } });
    let value = (stack[0] as PropertyLayer).value;
    for (let index = 1; index < stack.length; index++)
      value = mergeValues(value, (stack[index] as PropertyLayer).value);
    merged.set(name, value);
  }
  if (conflicts.length > 1) conflicts.sort((a, b) => compareCodeUnits(a.name, b.name));
  // The layers say where each value came from (explain); generation alone only needs the result.
  return {
    layers: keepLayers ? sortedLayers(layers) : new Map(),
    merged,
    conflicts: conflicts.map((entry) => entry.error),
  };
}

const GLOBAL_SOURCE: PropertySource = { source: 'global' };

/** Layers by property name in code-unit order, as explain lists them. */
function sortedLayers(layers: ReadonlyMap<string, PropertyLayer[]>): Map<string, PropertyLayer[]> {
  return new Map([...layers.keys()].sort(compareCodeUnits).map((name) => [name, layers.get(name) ?? []]));
}

/** The node's own properties over its levels: the node's merged properties, keys sorted. */
export function nodeProperties(levels: GroupLevels, node: FleetNode): JsonObject {
  const names = new Set([...levels.merged.keys(), ...Object.keys(node.properties)]);
  const properties: JsonObject = {};
  for (const name of [...names].sort(compareCodeUnits)) {
    const below = levels.merged.get(name);
    const own = node.properties[name];
    properties[name] = (
      below === undefined ? own : own === undefined ? below : mergeValues(below, own)
    ) as Json;
  }
  return properties;
}

/**
 * Global parameters, then the node's enabled groups (parents before children), then the node's own
 * properties (semantics.md §5). Two groups that are not parent and child and give one property
 * different values fail the node, unless a group below both settles it.
 */
export function inheritProperties(
  compiled: CompiledFleet,
  node: FleetNode,
  levels: GroupLevels = groupLevels(
    compiled,
    levelGroups(compiled, compiled.groupsOfNode.get(node.id) ?? []),
  ),
): InheritedProperties {
  const layers = new Map<string, PropertyLayer[]>();
  for (const [name, stack] of levels.layers) layers.set(name, [...stack]);
  for (const name of Object.keys(node.properties).sort(compareCodeUnits)) {
    layers.set(name, [
      ...(layers.get(name) ?? []),
      { from: { source: 'node' }, value: node.properties[name] as Json },
    ]);
  }
  return { properties: nodeProperties(levels, node), layers, errors: levels.conflicts };
}

function groupConflict(compiled: CompiledFleet, stack: readonly PropertyLayer[]): NodeError | undefined {
  let groupLayers = 0;
  for (const layer of stack) if (layer.from.source === 'group') groupLayers++;
  // Most properties come from one level: no conflict to look for.
  if (groupLayers < 2) return undefined;
  const fromGroups = stack.flatMap((layer) =>
    layer.from.source === 'group' ? [{ groupId: layer.from.groupId, value: layer.value }] : [],
  );
  const isAncestor = (maybeAncestor: string, of: string): boolean =>
    compiled.ancestors.get(of)?.has(maybeAncestor) ?? false;
  // The most specific groups: no other group setting the property lies below them.
  const mostSpecific = fromGroups.filter(
    (candidate) => !fromGroups.some((other) => isAncestor(candidate.groupId, other.groupId)),
  );
  const first = mostSpecific[0];
  const disagreeing = mostSpecific.filter((entry) => !jsonEqual(entry.value, first?.value ?? null));
  if (!first || disagreeing.length === 0) return undefined;
  const groupIds = mostSpecific.map((entry) => entry.groupId).sort(compareCodeUnits);
  return {
    code: 'PROPERTY_CONFLICT',
    message: `Property %s has different values in groups ${groupIds.join(' and ')}, which are not parent and child`,
    groupIds,
  };
}
