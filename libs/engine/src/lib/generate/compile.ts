import type {
  Criterion,
  Directive,
  Fleet,
  FleetNode,
  Group,
  Relationship,
  Rule,
  Target,
  Technique,
} from '../model/fleet';
import { compareCodeUnits } from '../text/compare';
import { matchesCriterion } from '../targeting/criteria';

/** A validated fleet with the indexes generation needs (memberships, lookups). Immutable. */
export interface CompiledFleet {
  readonly fleet: Fleet;
  /** Node ids, sorted. */
  readonly nodeIds: readonly string[];
  readonly nodes: ReadonlyMap<string, FleetNode>;
  readonly directives: ReadonlyMap<string, Directive>;
  readonly rules: ReadonlyMap<string, Rule>;
  readonly groups: ReadonlyMap<string, Group>;
  /** Technique id → version → technique. */
  readonly techniques: ReadonlyMap<string, ReadonlyMap<string, Technique>>;
  /** Group id → its members (static ∪ dynamic), whether the group is enabled or not. */
  readonly members: ReadonlyMap<string, ReadonlySet<string>>;
  /** Node id → ids of the groups it belongs to, sorted. */
  readonly groupsOfNode: ReadonlyMap<string, readonly string[]>;
  /** Group id → its ancestors through the subgroup relation (criteria `all` naming `{group: P}`). */
  readonly ancestors: ReadonlyMap<string, ReadonlySet<string>>;
  /** Node id → the enabled rules that target it, sorted by id. */
  readonly rulesOfNode: ReadonlyMap<string, readonly string[]>;
  /** Rule id → why it applies to no node, when it applies to none by construction. */
  readonly inactiveRules: ReadonlyMap<string, string>;
  /** Directive id → the fleet-wide `relationships` that name it. */
  readonly relationshipsOf: ReadonlyMap<string, readonly Relationship[]>;
  /** Policy servers: root and every relay id. */
  readonly policyServers: ReadonlySet<string>;
}

export function compileFleet(fleet: Fleet): CompiledFleet {
  const nodes = new Map(fleet.nodes.map((node) => [node.id, node]));
  const nodeIds = [...nodes.keys()].sort(compareCodeUnits);
  const groups = new Map(fleet.groups.map((group) => [group.id, group]));
  const techniques = new Map<string, Map<string, Technique>>();
  for (const technique of fleet.techniques) {
    const versions = techniques.get(technique.id) ?? new Map<string, Technique>();
    versions.set(technique.version, technique);
    techniques.set(technique.id, versions);
  }
  const members = computeMemberships(groups, nodes, nodeIds);
  const groupsOfNode = new Map<string, string[]>(nodeIds.map((id) => [id, []]));
  for (const groupId of [...members.keys()].sort(compareCodeUnits)) {
    for (const nodeId of members.get(groupId) ?? []) groupsOfNode.get(nodeId)?.push(groupId);
  }
  const policyServers = new Set(['root', ...fleet.relays.map((relay) => relay.id)]);

  const rulesOfNode = new Map<string, string[]>(nodeIds.map((id) => [id, []]));
  const inactiveRules = new Map<string, string>();
  const context: TargetContext = { nodeIds, nodes, groups, members, policyServers };
  for (const rule of [...fleet.rules].sort((a, b) => compareCodeUnits(a.id, b.id))) {
    if (!rule.enabled) {
      inactiveRules.set(rule.id, 'the rule is disabled');
      continue;
    }
    const disabledGroup = disabledGroupIn(rule.targets, groups);
    if (disabledGroup) {
      inactiveRules.set(rule.id, `its target names the disabled group ${disabledGroup}`);
      continue;
    }
    for (const nodeId of evaluateTarget(rule.targets, context)) rulesOfNode.get(nodeId)?.push(rule.id);
  }

  const relationshipsOf = new Map<string, Relationship[]>();
  for (const relationship of fleet.relationships) {
    for (const end of new Set([relationship.from, relationship.to])) {
      relationshipsOf.set(end, [...(relationshipsOf.get(end) ?? []), relationship]);
    }
  }

  return {
    fleet,
    nodeIds,
    nodes,
    directives: new Map(fleet.directives.map((directive) => [directive.id, directive])),
    rules: new Map(fleet.rules.map((rule) => [rule.id, rule])),
    groups,
    techniques,
    members,
    groupsOfNode,
    ancestors: computeAncestors(groups),
    rulesOfNode,
    inactiveRules,
    relationshipsOf,
    policyServers,
  };
}

function criteriaList(group: Group): readonly Criterion[] {
  const criteria = group.criteria;
  if (!criteria) return [];
  return 'all' in criteria ? criteria.all : criteria.any;
}

/** Parents of a subgroup: the groups named by `{group}` criteria inside an `all`. */
export function parentGroups(group: Group): string[] {
  if (!group.criteria || !('all' in group.criteria)) return [];
  return group.criteria.all.flatMap((criterion) => ('group' in criterion ? [criterion.group] : []));
}

function computeMemberships(
  groups: ReadonlyMap<string, Group>,
  nodes: ReadonlyMap<string, FleetNode>,
  nodeIds: readonly string[],
): Map<string, Set<string>> {
  const members = new Map<string, Set<string>>();
  const regexCache = new Map<string, RegExp>();
  const resolve = (groupId: string): Set<string> => {
    const known = members.get(groupId);
    if (known) return known;
    const group = groups.get(groupId);
    const result = new Set<string>();
    if (!group) return result;
    for (const nodeId of group.nodes) if (nodes.has(nodeId)) result.add(nodeId);
    const criteria = group.criteria;
    const list = criteriaList(group);
    // An empty criteria list selects no node, like a search with no criteria.
    if (criteria && list.length > 0) {
      const groupSets = list.map((criterion) =>
        'group' in criterion ? resolve(criterion.group) : undefined,
      );
      const all = 'all' in criteria;
      for (const nodeId of nodeIds) {
        if (result.has(nodeId)) continue;
        const node = nodes.get(nodeId) as FleetNode;
        const test = (criterion: (typeof list)[number], index: number): boolean =>
          'group' in criterion
            ? (groupSets[index] as Set<string>).has(nodeId)
            : matchesCriterion(criterion, node, regexCache);
        if (all ? list.every(test) : list.some(test)) result.add(nodeId);
      }
    }
    members.set(groupId, result);
    return result;
  };
  for (const groupId of [...groups.keys()].sort(compareCodeUnits)) resolve(groupId);
  return members;
}

function computeAncestors(groups: ReadonlyMap<string, Group>): Map<string, Set<string>> {
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

interface TargetContext {
  readonly nodeIds: readonly string[];
  readonly nodes: ReadonlyMap<string, FleetNode>;
  readonly groups: ReadonlyMap<string, Group>;
  readonly members: ReadonlyMap<string, ReadonlySet<string>>;
  readonly policyServers: ReadonlySet<string>;
}

/** The first disabled group a target names, if any: such a rule applies nowhere (semantics.md §1). */
export function disabledGroupIn(target: Target, groups: ReadonlyMap<string, Group>): string | undefined {
  for (const reference of groupReferences(target)) {
    if (groups.get(reference)?.enabled === false) return reference;
  }
  return undefined;
}

export function groupReferences(target: Target): string[] {
  if (typeof target === 'string') return target.startsWith('group:') ? [target.slice(6)] : [];
  if (Array.isArray(target)) return target.flatMap(groupReferences);
  const composite = target as Exclude<Target, string | readonly Target[]>;
  if ('or' in composite) return composite.or.flatMap(groupReferences);
  if ('and' in composite) return composite.and.flatMap(groupReferences);
  return [
    ...groupReferences(composite.include),
    ...(composite.exclude ? groupReferences(composite.exclude) : []),
  ];
}

function evaluateTarget(target: Target, context: TargetContext): Set<string> {
  if (typeof target === 'string') {
    if (target === 'special:all') return new Set(context.nodeIds);
    if (target === 'special:all_exceptPolicyServers') {
      return new Set(context.nodeIds.filter((nodeId) => !context.policyServers.has(nodeId)));
    }
    if (target.startsWith('group:')) return new Set(context.members.get(target.slice(6)) ?? []);
    const server = target.slice('policyServer:'.length);
    return new Set(context.nodeIds.filter((nodeId) => context.nodes.get(nodeId)?.policyServer === server));
  }
  if (Array.isArray(target)) return union(target.map((inner: Target) => evaluateTarget(inner, context)));
  const composite = target as Exclude<Target, string | readonly Target[]>;
  if ('or' in composite) return union(composite.or.map((inner) => evaluateTarget(inner, context)));
  if ('and' in composite) {
    // An empty intersection is every node (semantics.md §1).
    let result = new Set(context.nodeIds);
    for (const inner of composite.and) {
      const set = evaluateTarget(inner, context);
      result = new Set([...result].filter((nodeId) => set.has(nodeId)));
    }
    return result;
  }
  const included = evaluateTarget(composite.include, context);
  if (composite.exclude === undefined) return included;
  const excluded = evaluateTarget(composite.exclude, context);
  return new Set([...included].filter((nodeId) => !excluded.has(nodeId)));
}

function union(sets: readonly Set<string>[]): Set<string> {
  const result = new Set<string>();
  for (const set of sets) for (const item of set) result.add(item);
  return result;
}
