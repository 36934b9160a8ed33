import type { CompiledFleet } from '../index/fleet-index';
import type { NodeError } from '../generate/types';
import type { FleetNode, Group } from '../model/fleet';
import { DEFAULT_INHERIT_MODE } from '../model/fleet';
import type { Json, JsonObject } from '../model/json';
import { isJsonObject, jsonEqual } from '../model/json';
import { compareCodeUnits } from '../text/compare';
import { flatMapList, mapList } from '../model/lists';

export type PropertySource =
  | { readonly source: 'global' }
  | { readonly source: 'group'; readonly groupId: string }
  | { readonly source: 'node' };

/** One level's contribution to a property. */
export interface PropertyLayer {
  readonly from: PropertySource;
  readonly value: Json;
  /** The inheritance mode this level declares for the property (`inheritModes`), if any. */
  readonly mode?: string;
}

export interface InheritedProperties {
  readonly properties: JsonObject;
  /** Property name → the levels that set it, least specific first. */
  readonly layers: ReadonlyMap<string, readonly PropertyLayer[]>;
  readonly errors: readonly NodeError[];
}

/**
 * Two levels of a property merged as Rudder's `inheritMode` says (semantics.md §5): its first
 * letter for two objects (`m`erge key by key, recursively in the same mode, or `o`verride), the
 * second for two arrays and the third for two strings (`o`verride, `a`ppend the more specific
 * one, `p`repend it). Any other pair: the more specific value replaces the other.
 */
export function mergeValues(
  lessSpecific: Json,
  moreSpecific: Json,
  mode: string = DEFAULT_INHERIT_MODE,
): Json {
  if (isJsonObject(lessSpecific) && isJsonObject(moreSpecific)) {
    if (mode[0] === 'o') return moreSpecific;
    const merged: JsonObject = { ...lessSpecific };
    for (const key of Object.keys(moreSpecific)) {
      const value = moreSpecific[key] as Json;
      setOwn(
        merged,
        key,
        Object.hasOwn(lessSpecific, key) ? mergeValues(lessSpecific[key] as Json, value, mode) : value,
      );
    }
    return merged;
  }
  if (Array.isArray(lessSpecific) && Array.isArray(moreSpecific))
    return combined(lessSpecific, moreSpecific, mode[1], (a, b) => [...a, ...b]);
  if (typeof lessSpecific === 'string' && typeof moreSpecific === 'string')
    return combined(lessSpecific, moreSpecific, mode[2], (a, b) => a + b);
  return moreSpecific;
}

function combined<T>(
  lessSpecific: T,
  moreSpecific: T,
  letter: string | undefined,
  join: (a: T, b: T) => T,
): T {
  if (letter === 'a') return join(lessSpecific, moreSpecific);
  if (letter === 'p') return join(moreSpecific, lessSpecific);
  return moreSpecific;
}

/** `object[key] = value`, as an own property even for `__proto__` (a key JSON may hold). */
function setOwn(object: JsonObject, key: string, value: Json): void {
  if (key === '__proto__')
    Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
  else object[key] = value;
}

/**
 * A property's levels merged in order, least specific first: each level combines in the mode it
 * declares, or else in the mode the last level declaring one did (Rudder: a mode is inherited).
 */
export function mergeLayers(
  layers: readonly { readonly value: Json; readonly mode?: string | undefined }[],
): {
  value: Json;
  mode: string | undefined;
} {
  const first = layers[0] as { readonly value: Json; readonly mode?: string | undefined };
  let value = first.value;
  let mode = first.mode;
  for (let index = 1; index < layers.length; index++) {
    const layer = layers[index] as { readonly value: Json; readonly mode?: string | undefined };
    mode = layer.mode ?? mode;
    value = mergeValues(value, layer.value, mode);
  }
  return { value, mode };
}

/** Global parameters and a set of groups, merged: every level below the node's own. */
export interface GroupLevels {
  /** Property name → the levels that set it, least specific first (global, then groups). */
  readonly layers: ReadonlyMap<string, readonly PropertyLayer[]>;
  readonly merged: ReadonlyMap<string, Json>;
  /** Property name → the inheritance mode its levels leave in force, when one declares one. */
  readonly modes: ReadonlyMap<string, string>;
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
  const add = (
    from: PropertySource,
    values: Readonly<Record<string, Json>>,
    modes: Readonly<Record<string, string>>,
  ): void => {
    for (const name of Object.keys(values)) {
      const layer = layerOf(from, values[name] as Json, Object.hasOwn(modes, name) ? modes[name] : undefined);
      const stack = layers.get(name);
      if (stack) stack.push(layer);
      else layers.set(name, [layer]);
    }
  };
  add(GLOBAL_SOURCE, compiled.parameters, compiled.settings.parameterInheritModes);
  for (const group of groups)
    add({ source: 'group', groupId: group.id }, group.properties, group.inheritModes ?? NO_MODES);
  const conflicts: { readonly name: string; readonly error: NodeError }[] = [];
  const merged = new Map<string, Json>();
  const modes = new Map<string, string>();
  // Names in code-unit order where the order shows (layers kept for explain); conflicts always.
  const names = keepLayers ? [...layers.keys()].sort(compareCodeUnits) : layers.keys();
  for (const name of names) {
    const stack = layers.get(name) as PropertyLayer[];
    if (stack.length === 1) {
      const only = stack[0] as PropertyLayer;
      merged.set(name, only.value);
      if (only.mode !== undefined) modes.set(name, only.mode);
      continue;
    }
    const conflict = groupConflict(compiled, stack);
    if (conflict)
      conflicts.push({ name, error: { ...conflict, message: conflict.message.replace('%s', name) } });
    const { value, mode } = mergeLayers(stack);
    merged.set(name, value);
    if (mode !== undefined) modes.set(name, mode);
  }
  if (conflicts.length > 1) conflicts.sort((a, b) => compareCodeUnits(a.name, b.name));
  // The layers say where each value came from (explain); generation alone only needs the result.
  return {
    layers: keepLayers ? sortedLayers(layers) : new Map(),
    merged,
    modes,
    conflicts: mapList(conflicts, (entry) => entry.error),
  };
}

const GLOBAL_SOURCE: PropertySource = { source: 'global' };
const NODE_SOURCE: PropertySource = { source: 'node' };
const NO_MODES: Readonly<Record<string, string>> = {};

function layerOf(from: PropertySource, value: Json, mode: string | undefined): PropertyLayer {
  return mode === undefined ? { from, value } : { from, value, mode };
}

/** The inheritance mode a node sets for one of its properties, if any. */
function ownMode(node: FleetNode, name: string): string | undefined {
  const modes = node.inheritModes;
  return modes !== undefined && Object.hasOwn(modes, name) ? modes[name] : undefined;
}

/** Layers by property name in code-unit order, as explain lists them. */
function sortedLayers(layers: ReadonlyMap<string, PropertyLayer[]>): Map<string, PropertyLayer[]> {
  return new Map(
    mapList([...layers.keys()].sort(compareCodeUnits), (name) => [name, layers.get(name) ?? []]),
  );
}

/** The node's own properties over its levels: the node's merged properties, keys sorted. */
export function nodeProperties(levels: GroupLevels, node: FleetNode): JsonObject {
  const names = new Set([...levels.merged.keys(), ...Object.keys(node.properties)]);
  const properties: JsonObject = {};
  for (const name of [...names].sort(compareCodeUnits)) {
    const below = levels.merged.get(name);
    const own = node.properties[name];
    properties[name] = (
      below === undefined
        ? own
        : own === undefined
          ? below
          : mergeValues(below, own, ownMode(node, name) ?? levels.modes.get(name))
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
      layerOf(NODE_SOURCE, node.properties[name] as Json, ownMode(node, name)),
    ]);
  }
  return { properties: nodeProperties(levels, node), layers, errors: levels.conflicts };
}

function groupConflict(compiled: CompiledFleet, stack: readonly PropertyLayer[]): NodeError | undefined {
  let groupLayers = 0;
  for (const layer of stack) if (layer.from.source === 'group') groupLayers++;
  // Most properties come from one level: no conflict to look for.
  if (groupLayers < 2) return undefined;
  const fromGroups = flatMapList(stack, (layer) =>
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
  const groupIds = mapList(mostSpecific, (entry) => entry.groupId).sort(compareCodeUnits);
  return {
    code: 'PROPERTY_CONFLICT',
    message: `Property %s has different values in groups ${groupIds.join(' and ')}, which are not parent and child`,
    groupIds,
  };
}
