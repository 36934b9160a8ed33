import type { Criterion, FleetNode, Group } from '../model/fleet';
import type { Json } from '../model/json';
import { canonicalJson } from '../model/json';
import { matchesCriterion, valueAtPath } from '../targeting/criteria';
import { compareCodeUnits } from '../text/compare';
import { flatMapList, mapList } from '../model/lists';

export function criteriaList(group: Group): readonly Criterion[] {
  const criteria = group.criteria;
  if (!criteria) return [];
  return 'all' in criteria ? criteria.all : criteria.any;
}

/** Parents of a subgroup: the groups named by `{group}` criteria inside an `all`. */
export function parentGroups(group: Group): string[] {
  if (!group.criteria || !('all' in group.criteria)) return [];
  return flatMapList(group.criteria.all, (criterion) => ('group' in criterion ? [criterion.group] : []));
}

/** Every group a group's criteria name, in `all` or `any`: its membership depends on theirs. */
export function referencedGroups(group: Group): string[] {
  return flatMapList(criteriaList(group), (criterion) => ('group' in criterion ? [criterion.group] : []));
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

/** Whether some groups name each other in a circle through their criteria (names of no group aside). */
export function hasGroupCycle(groups: ReadonlyMap<string, Group>): boolean {
  const state = new Map<string, 'visiting' | 'done'>();
  const cycleFrom = (groupId: string): boolean => {
    state.set(groupId, 'visiting');
    for (const reference of referencedGroups(groups.get(groupId) as Group)) {
      if (!groups.has(reference)) continue;
      const seen = state.get(reference);
      if (seen === 'visiting' || (seen === undefined && cycleFrom(reference))) return true;
    }
    state.set(groupId, 'done');
    return false;
  };
  for (const groupId of groups.keys()) if (!state.has(groupId) && cycleFrom(groupId)) return true;
  return false;
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

/** Nodes that can meet a criterion; `exact` when every one of them does. */
export interface Candidates {
  readonly ids: Iterable<string>;
  readonly size: number;
  readonly exact: boolean;
}

interface NumericIndex {
  /** Nodes with a number at the path, by that number ascending. */
  readonly sorted: { value: number; id: string }[];
  /** Nodes with a string at the path: it may read as a number or a version, so they are tested. */
  readonly strings: Set<string>;
}

/**
 * Nodes by the value at the paths criteria test: by text for `eq`/`in`, by number for `lt`, `le`,
 * `gt`, `ge` on a number. A group's `all` criteria then look only at the nodes the most selective
 * criterion leaves, instead of at every node.
 */
export class ValueIndex {
  private readonly byText = new Map<string, Map<string, Set<string>>>();
  private readonly byNumber = new Map<string, NumericIndex>();

  constructor(private readonly nodes: ReadonlyMap<string, FleetNode>) {}

  candidates(criterion: ValueCriterion): Candidates | undefined {
    const { op, value } = criterion;
    if (op === 'exists') {
      const ids = new Set<string>();
      for (const nodes of this.textIndexFor(keyOf(criterion)).values())
        for (const nodeId of nodes) ids.add(nodeId);
      return { ids, size: ids.size, exact: true };
    }
    if (value === undefined) return undefined;
    if (op === 'eq' || op === 'in') {
      if (op === 'in' && !Array.isArray(value)) return undefined;
      const values = op === 'eq' ? [value] : (value as Json[]);
      const index = this.textIndexFor(keyOf(criterion));
      if (values.length === 1) {
        const ids = index.get(textOf(values[0] as Json)) ?? EMPTY;
        return { ids, size: ids.size, exact: true };
      }
      const ids = new Set<string>();
      for (const candidate of values)
        for (const nodeId of index.get(textOf(candidate)) ?? []) ids.add(nodeId);
      return { ids, size: ids.size, exact: true };
    }
    if (op === 'regex' || op === 'neq') {
      // One test per distinct value, not per node: criteria compare values by their text.
      const index = this.textIndexFor(keyOf(criterion));
      const regex = op === 'regex' ? new RegExp(String(value)) : undefined;
      const expected = textOf(value);
      const ids = new Set<string>();
      for (const [text, nodes] of index) {
        if (regex ? regex.test(text) : text !== expected) for (const nodeId of nodes) ids.add(nodeId);
      }
      return { ids, size: ids.size, exact: true };
    }
    if ((op === 'lt' || op === 'le' || op === 'gt' || op === 'ge') && typeof value === 'number') {
      const index = this.numberIndexFor(keyOf(criterion));
      const { sorted, strings } = index;
      const below = (inclusive: boolean): number => {
        let low = 0;
        let high = sorted.length;
        while (low < high) {
          const middle = (low + high) >> 1;
          const at = (sorted[middle] as { value: number }).value;
          if (at < value || (inclusive && at === value)) low = middle + 1;
          else high = middle;
        }
        return low;
      };
      const range =
        op === 'lt'
          ? sorted.slice(0, below(false))
          : op === 'le'
            ? sorted.slice(0, below(true))
            : op === 'gt'
              ? sorted.slice(below(true))
              : sorted.slice(below(false));
      const ids = mapList(range, (entry) => entry.id);
      return {
        ids: strings.size === 0 ? ids : [...ids, ...strings],
        size: ids.length + strings.size,
        exact: strings.size === 0,
      };
    }
    return undefined;
  }

  /** Nodes whose number at one path meets every bound (criteria on one key, `lt`/`le`/`gt`/`ge` a number). */
  rangeCandidates(bounds: readonly (ValueCriterion & { readonly value: number })[]): Candidates {
    const { sorted, strings } = this.numberIndexFor(keyOf(bounds[0] as ValueCriterion));
    let from = 0;
    let to = sorted.length;
    for (const { op, value } of bounds) {
      if (op === 'gt') from = Math.max(from, firstAbove(sorted, value));
      else if (op === 'ge') from = Math.max(from, firstAtLeast(sorted, value));
      else if (op === 'lt') to = Math.min(to, firstAtLeast(sorted, value));
      else to = Math.min(to, firstAbove(sorted, value));
    }
    const ids: string[] = [];
    for (let at = from; at < to; at++) ids.push((sorted[at] as { id: string }).id);
    return {
      ids: strings.size === 0 ? ids : [...ids, ...strings],
      size: ids.length + strings.size,
      exact: strings.size === 0,
    };
  }

  nodeRemoved(node: FleetNode): void {
    for (const [key, index] of this.byText) {
      const value = valueOf(node, key);
      if (value !== undefined) index.get(textOf(value))?.delete(node.id);
    }
    for (const [key, index] of this.byNumber) {
      const value = valueOf(node, key);
      if (typeof value === 'number') {
        for (let at = firstAtLeast(index.sorted, value); at < index.sorted.length; at++) {
          const entry = index.sorted[at] as { value: number; id: string };
          if (entry.value !== value) break;
          if (entry.id === node.id) {
            index.sorted.splice(at, 1);
            break;
          }
        }
      } else if (typeof value === 'string') index.strings.delete(node.id);
    }
  }

  nodeAdded(node: FleetNode): void {
    for (const [key, index] of this.byText) addText(index, node, key);
    for (const [key, index] of this.byNumber) {
      const value = valueOf(node, key);
      if (typeof value === 'number')
        index.sorted.splice(firstAtLeast(index.sorted, value), 0, { value, id: node.id });
      else if (typeof value === 'string') index.strings.add(node.id);
    }
  }

  private textIndexFor(key: string): Map<string, Set<string>> {
    let index = this.byText.get(key);
    if (!index) {
      index = new Map();
      for (const node of this.nodes.values()) addText(index, node, key);
      this.byText.set(key, index);
    }
    return index;
  }

  private numberIndexFor(key: string): NumericIndex {
    let index = this.byNumber.get(key);
    if (!index) {
      index = { sorted: [], strings: new Set() };
      for (const node of this.nodes.values()) {
        const value = valueOf(node, key);
        if (typeof value === 'number') index.sorted.push({ value, id: node.id });
        else if (typeof value === 'string') index.strings.add(node.id);
      }
      index.sorted.sort((a, b) => a.value - b.value);
      this.byNumber.set(key, index);
    }
    return index;
  }
}

const EMPTY: ReadonlySet<string> = new Set();

/** The position of the first entry whose value is at least `value`. */
function firstAtLeast(sorted: readonly { value: number }[], value: number): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if ((sorted[middle] as { value: number }).value < value) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** The position of the first entry whose value is above `value`. */
function firstAbove(sorted: readonly { value: number }[], value: number): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if ((sorted[middle] as { value: number }).value <= value) low = middle + 1;
    else high = middle;
  }
  return low;
}

function keyOf(criterion: ValueCriterion): string {
  return 'fact' in criterion ? `f:${criterion.fact}` : `p:${criterion.property}`;
}

function valueOf(node: FleetNode, key: string): Json | undefined {
  return valueAtPath(key.startsWith('f:') ? node.facts : node.properties, key.slice(2));
}

function addText(index: Map<string, Set<string>>, node: FleetNode, key: string): void {
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

/** What an index says of a criterion: a group's members, or the value index's candidates. */
function candidatesOf(criterion: Criterion, context: MembershipContext): Candidates | undefined {
  if (!('group' in criterion)) return context.values.candidates(criterion);
  const members = context.members.get(criterion.group);
  return members && { ids: members, size: members.size, exact: true };
}

/** Members of an `any` meet one of its criteria: the union of what each may select, if each can say. */
function anyCandidates(list: readonly Criterion[], context: MembershipContext): Set<string> | undefined {
  const union = new Set<string>();
  for (const criterion of list) {
    const found =
      'group' in criterion ? context.members.get(criterion.group) : context.values.candidates(criterion)?.ids;
    if (!found) return undefined;
    for (const nodeId of found) union.add(nodeId);
  }
  return union;
}

function meets(criterion: Criterion, node: FleetNode, context: MembershipContext): boolean {
  return 'group' in criterion
    ? (context.members.get(criterion.group)?.has(node.id) ?? false)
    : matchesCriterion(criterion, node, context.regexCache);
}

/** Criteria of an `all` with what the indexes say of them: one entry per criterion, or per numeric range. */
interface IndexedCriteria {
  readonly criteria: readonly Criterion[];
  readonly candidates: Candidates | undefined;
}

function isNumericBound(criterion: Criterion): criterion is ValueCriterion & { readonly value: number } {
  return (
    !('group' in criterion) &&
    (criterion.op === 'lt' || criterion.op === 'le' || criterion.op === 'gt' || criterion.op === 'ge') &&
    typeof criterion.value === 'number'
  );
}

/**
 * The criteria of an `all`, bounds on one number merged into one range (`bucket ge 20` and `bucket lt
 * 25` select one slice of the sorted values, not two large ones to intersect).
 */
function indexedCriteria(list: readonly Criterion[], context: MembershipContext): IndexedCriteria[] {
  const bounds = new Map<string, (ValueCriterion & { readonly value: number })[]>();
  const entries: IndexedCriteria[] = [];
  for (const criterion of list) {
    if (isNumericBound(criterion)) {
      const key = keyOf(criterion);
      const same = bounds.get(key);
      if (same) same.push(criterion);
      else bounds.set(key, [criterion]);
    } else entries.push({ criteria: [criterion], candidates: candidatesOf(criterion, context) });
  }
  for (const criteria of bounds.values())
    entries.push({
      criteria,
      candidates:
        criteria.length === 1
          ? context.values.candidates(criteria[0] as ValueCriterion)
          : context.values.rangeCandidates(criteria),
    });
  return entries;
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
    const found = indexedCriteria(list, context);
    let smallest: IndexedCriteria | undefined;
    for (const entry of found)
      if (entry.candidates && (!smallest || entry.candidates.size < (smallest.candidates as Candidates).size))
        smallest = entry;
    if (smallest) {
      // A node the smallest set holds meets the other criteria with an exact set when those hold it.
      const checks = flatMapList(found, (entry): ((nodeId: string, node: FleetNode) => boolean)[] => {
        const entryCandidates = entry.candidates;
        if (entry === smallest && entryCandidates?.exact) return [];
        if (entryCandidates?.exact && entryCandidates.ids instanceof Set) {
          const ids = entryCandidates.ids;
          return [(nodeId) => ids.has(nodeId)];
        }
        return mapList(entry.criteria, (criterion) => (_nodeId, node) => meets(criterion, node, context));
      });
      const ids = (smallest.candidates as Candidates).ids;
      // The indexes hold only nodes of the fleet: an exact set needing no other check is the answer.
      if (checks.length === 0) {
        if (result.size === 0) return new Set(ids);
        for (const nodeId of ids) result.add(nodeId);
        return result;
      }
      for (const nodeId of ids) {
        const node = context.nodes.get(nodeId);
        if (node && checks.every((check) => check(nodeId, node))) result.add(nodeId);
      }
      return result;
    }
  }
  if ('any' in group.criteria) candidates = anyCandidates(list, context) ?? candidates;
  for (const nodeId of candidates) {
    if (result.has(nodeId)) continue;
    const node = context.nodes.get(nodeId);
    if (node && isMember(group, node, context)) result.add(nodeId);
  }
  return result;
}
