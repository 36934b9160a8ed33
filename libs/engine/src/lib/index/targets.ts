import type { FleetNode, Group, Target } from '../model/fleet';
import { flatMapList, mapList } from '../model/lists';

export interface TargetContext {
  readonly nodeIds: readonly string[];
  readonly nodes: ReadonlyMap<string, FleetNode>;
  readonly members: ReadonlyMap<string, ReadonlySet<string>>;
  readonly policyServers: ReadonlySet<string>;
}

type Composite = Exclude<Target, string | readonly Target[]>;

/** The first disabled group a target names, if any: such a rule applies nowhere (semantics.md §1). */
export function disabledGroupIn(target: Target, groups: ReadonlyMap<string, Group>): string | undefined {
  for (const reference of groupReferences(target)) {
    if (groups.get(reference)?.enabled === false) return reference;
  }
  return undefined;
}

export function groupReferences(target: Target): string[] {
  if (typeof target === 'string') return target.startsWith('group:') ? [target.slice(6)] : [];
  if (Array.isArray(target)) return flatMapList(target, groupReferences);
  const composite = target as Composite;
  if ('or' in composite) return flatMapList(composite.or, groupReferences);
  if ('and' in composite) return flatMapList(composite.and, groupReferences);
  return [
    ...groupReferences(composite.include),
    ...(composite.exclude ? groupReferences(composite.exclude) : []),
  ];
}

/** Whether a target's meaning depends on which ids are policy servers or on nodes' policy server. */
export function dependsOnPolicyServers(target: Target): boolean {
  if (typeof target === 'string')
    return target === 'special:all_exceptPolicyServers' || target.startsWith('policyServer:');
  if (Array.isArray(target)) return target.some(dependsOnPolicyServers);
  const composite = target as Composite;
  if ('or' in composite) return composite.or.some(dependsOnPolicyServers);
  if ('and' in composite) return composite.and.some(dependsOnPolicyServers);
  return (
    dependsOnPolicyServers(composite.include) ||
    (composite.exclude !== undefined && dependsOnPolicyServers(composite.exclude))
  );
}

/** The nodes a target selects. */
export function evaluateTarget(target: Target, context: TargetContext): Set<string> {
  if (typeof target === 'string') {
    if (target === 'special:all') return new Set(context.nodeIds);
    if (target === 'special:all_exceptPolicyServers') {
      return new Set(context.nodeIds.filter((nodeId) => !context.policyServers.has(nodeId)));
    }
    if (target.startsWith('group:')) return new Set(context.members.get(target.slice(6)) ?? []);
    const server = target.slice('policyServer:'.length);
    return new Set(context.nodeIds.filter((nodeId) => context.nodes.get(nodeId)?.policyServer === server));
  }
  if (Array.isArray(target)) return union(mapList(target, (inner: Target) => evaluateTarget(inner, context)));
  const composite = target as Composite;
  if ('or' in composite) return union(mapList(composite.or, (inner) => evaluateTarget(inner, context)));
  if ('and' in composite) {
    // An empty intersection is every node (semantics.md §1).
    if (composite.and.length === 0) return new Set(context.nodeIds);
    const sets = mapList(composite.and, (inner) => evaluateTarget(inner, context)).sort(
      (a, b) => a.size - b.size,
    );
    const [result, ...others] = sets as [Set<string>, ...Set<string>[]];
    for (const set of others) for (const nodeId of result) if (!set.has(nodeId)) result.delete(nodeId);
    return result;
  }
  const included = evaluateTarget(composite.include, context);
  if (composite.exclude === undefined) return included;
  for (const nodeId of evaluateTarget(composite.exclude, context)) included.delete(nodeId);
  return included;
}

/** Whether a target selects one node: `evaluateTarget(...).has(node.id)` without the whole set. */
export function targetSelects(target: Target, node: FleetNode, context: TargetContext): boolean {
  if (typeof target === 'string') {
    if (target === 'special:all') return true;
    if (target === 'special:all_exceptPolicyServers') return !context.policyServers.has(node.id);
    if (target.startsWith('group:')) return context.members.get(target.slice(6))?.has(node.id) ?? false;
    return node.policyServer === target.slice('policyServer:'.length);
  }
  if (Array.isArray(target)) return target.some((inner: Target) => targetSelects(inner, node, context));
  const composite = target as Composite;
  if ('or' in composite) return composite.or.some((inner) => targetSelects(inner, node, context));
  if ('and' in composite) return composite.and.every((inner) => targetSelects(inner, node, context));
  return (
    targetSelects(composite.include, node, context) &&
    (composite.exclude === undefined || !targetSelects(composite.exclude, node, context))
  );
}

function union(sets: readonly Set<string>[]): Set<string> {
  const result = new Set<string>();
  for (const set of sets) for (const item of set) result.add(item);
  return result;
}
