import type { Criterion, FleetNode, Group } from '../model/fleet';
import type { Json } from '../model/json';
import { canonicalJson } from '../model/json';
import { matchesCriterion, valueAtPath } from '../targeting/criteria';
import { compareCodeUnits } from '../text/compare';

export function criteriaList(group: Group): readonly Criterion[] {
  const criteria = group.criteria;
  if (!criteria) return [];
  return 'all' in criteria ? criteria.all : criteria.any;
}

/** Parents of a subgroup: the groups named by `{group}` criteria inside an `all`. */
export function parentGroups(group: Group): string[] {
  if (!group.criteria || !('all' in group.criteria)) return [];
  return group.criteria.all.flatMap((criterion) => ('group' in criterion ? [criterion.group] : []));
}

/** Every group a group's criteria name, in `all` or `any`: its membership depends on theirs. */
export function referencedGroups(group: Group): string[] {
  return criteriaList(group).flatMap((criterion) => ('group' in criterion ? [criterion.group] : []));
}

/** Groups ordered so that every group comes after the groups its criteria name (validated acyclic). */
export function groupEvaluationOrder(groups: ReadonlyMap<string, Group>): string[] {
  const order: string[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (groupId: string): void => {
    if (state.has(groupId)) return;
    state.set(groupId, 'visiting');
    const group = groups.get(groupId);
    for (const reference of group ? referencedGroups(group) : []) visit(reference);
    state.set(groupId, 'done');
    order.push(groupId);
  };
  for (const groupId of [...groups.keys()].sort(compareCodeUnits)) visit(groupId);
  return order;
}

/** Group id → every ancestor through the subgroup relation. */
export function computeAncestors(groups: ReadonlyMap<string, Group>): Map<string, Set<string>> {
  const ancestors = new Map<string, Set<string>>();
  const resolve = (groupId: string): Set<string> => {
    const known = ancestors.get(groupId);
    if (known) return known;
    const result = new Set<string>();
    ancestors.set(groupId, result);
    const group = groups.get(groupId);
    for (const parent of group ? parentGroups(group) : []) {
      result.add(parent);
      for (const grandParent of resolve(parent)) result.add(grandParent);
    }
    return result;
  };
  for (const groupId of groups.keys()) resolve(groupId);
  return ancestors;
}

type ValueCriterion = Exclude<Criterion, { group: string }>;

/**
 * Nodes by the text of a fact or property value, for the paths `eq`/`in` criteria test: a group
 * with such a criterion in an `all` only looks at the nodes that can match it.
 */
export class ValueIndex {
  private readonly byPath = new Map<string, Map<string, Set<string>>>();

  constructor(private readonly nodes: ReadonlyMap<string, FleetNode>) {}

  /** Node ids whose value at the criterion's path has one of the criterion's texts. */
  candidates(criterion: ValueCriterion): ReadonlySet<string> | undefined {
    if (criterion.op !== 'eq' && criterion.op !== 'in') return undefined;
    if (criterion.value === undefined) return undefined;
    if (criterion.op === 'in' && !Array.isArray(criterion.value)) return undefined;
    const values = criterion.op === 'eq' ? [criterion.value] : (criterion.value as Json[]);
    const index = this.indexFor(keyOf(criterion));
    if (values.length === 1) return index.get(textOf(values[0] as Json)) ?? EMPTY;
    const result = new Set<string>();
    for (const value of values) for (const nodeId of index.get(textOf(value)) ?? []) result.add(nodeId);
    return result;
  }

  nodeRemoved(node: FleetNode): void {
    for (const [key, index] of this.byPath) {
      const value = valueOf(node, key);
      if (value !== undefined) index.get(textOf(value))?.delete(node.id);
    }
  }

  nodeAdded(node: FleetNode): void {
    for (const [key, index] of this.byPath) add(index, node, key);
  }

  private indexFor(key: string): Map<string, Set<string>> {
    let index = this.byPath.get(key);
    if (!index) {
      index = new Map();
      for (const node of this.nodes.values()) add(index, node, key);
      this.byPath.set(key, index);
    }
    return index;
  }
}

const EMPTY: ReadonlySet<string> = new Set();

function keyOf(criterion: ValueCriterion): string {
  return 'fact' in criterion ? `f:${criterion.fact}` : `p:${criterion.property}`;
}

function valueOf(node: FleetNode, key: string): Json | undefined {
  return valueAtPath(key.startsWith('f:') ? node.facts : node.properties, key.slice(2));
}

function add(index: Map<string, Set<string>>, node: FleetNode, key: string): void {
  const value = valueOf(node, key);
  if (value === undefined) return;
  const text = textOf(value);
  let set = index.get(text);
  if (!set) index.set(text, (set = new Set()));
  set.add(node.id);
}

/** How criteria compare scalars (criteria.ts `sameValue`): by their text. */
function textOf(value: Json): string {
  return typeof value === 'string' ? value : canonicalJson(value);
}

export interface MembershipContext {
  readonly nodes: ReadonlyMap<string, FleetNode>;
  readonly members: ReadonlyMap<string, ReadonlySet<string>>;
  readonly values: ValueIndex;
  readonly regexCache: Map<string, RegExp>;
}

/** Whether a node is a member of a group: static member, or its criteria match. */
export function isMember(group: Group, node: FleetNode, context: MembershipContext): boolean {
  if (group.nodes.includes(node.id)) return true;
  const list = criteriaList(group);
  // An empty criteria list selects no node, like a search with no criteria.
  if (!group.criteria || list.length === 0) return false;
  const test = (criterion: Criterion): boolean => meets(criterion, node, context);
  return 'all' in group.criteria ? list.every(test) : list.some(test);
}

function meets(criterion: Criterion, node: FleetNode, context: MembershipContext): boolean {
  return 'group' in criterion
    ? (context.members.get(criterion.group)?.has(node.id) ?? false)
    : matchesCriterion(criterion, node, context.regexCache);
}

/** Every member of a group, looking only at the nodes that can match its most selective criterion. */
export function evaluateMembers(
  group: Group,
  nodeIds: Iterable<string>,
  context: MembershipContext,
): Set<string> {
  const result = new Set<string>();
  for (const nodeId of group.nodes) if (context.nodes.has(nodeId)) result.add(nodeId);
  const list = criteriaList(group);
  if (!group.criteria || list.length === 0) return result;
  let candidates: Iterable<string> = nodeIds;
  if ('all' in group.criteria) {
    let smallest: ReadonlySet<string> | undefined;
    let selective: Criterion | undefined;
    for (const criterion of list) {
      const set =
        'group' in criterion ? context.members.get(criterion.group) : context.values.candidates(criterion);
      if (set && (!smallest || set.size < smallest.size)) {
        smallest = set;
        selective = criterion;
      }
    }
    if (smallest) {
      // Every candidate meets the criterion that selected it: only the others are left to test.
      const rest = list.filter((criterion) => criterion !== selective);
      for (const nodeId of smallest) {
        const node = context.nodes.get(nodeId);
        if (node && rest.every((criterion) => meets(criterion, node, context))) result.add(nodeId);
      }
      return result;
    }
  }
  for (const nodeId of candidates) {
    if (result.has(nodeId)) continue;
    const node = context.nodes.get(nodeId);
    if (node && isMember(group, node, context)) result.add(nodeId);
  }
  return result;
}
