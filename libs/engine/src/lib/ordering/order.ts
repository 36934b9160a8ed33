import { createHash } from 'node:crypto';
import type { NodeError } from '../generate/types';
import type { OrderingMode } from '../model/fleet';
import type { Draft, FormedPolicy } from '../merge/policies';
import { namesOnly } from '../merge/policies';
import { insertSorted } from '../index/sorted';
import { compareCodeUnits } from '../text/compare';
import { mapList } from '../model/lists';

export type RelationKind = 'before' | 'require' | 'notify' | 'subscribe' | '->' | '~>';

/** `from` must be applied before `to`; `refresh`: `to` refreshes when `from` repairs something. */
export interface PolicyEdge {
  readonly from: string;
  readonly to: string;
  readonly kind: RelationKind;
  readonly refresh: boolean;
  /** The directive that declared the relationship, and the one it names. */
  readonly directiveIds: readonly [string, string];
}

export interface RelationshipSource {
  readonly before: readonly string[];
  readonly require: readonly string[];
  readonly notify: readonly string[];
  readonly subscribe: readonly string[];
}

export interface PolicyGraph {
  readonly edges: readonly PolicyEdge[];
  readonly errors: readonly NodeError[];
  readonly warnings: readonly string[];
}

/**
 * The node's relationship edges between policies (semantics.md §3): metaparameters are strict —
 * naming a directive not applied here fails the node — while fleet-wide relationships only
 * order the ends both present.
 */
export function buildPolicyGraph(
  policies: readonly FormedPolicy[],
  existingDirectives: { has(id: string): boolean },
  metaparametersOf: (directiveId: string) => RelationshipSource,
  fleetRelationships: readonly { readonly from: string; readonly to: string; readonly kind: '->' | '~>' }[],
  /** Whether a policy's directives declare relationships, when the caller knows it already. */
  policyDeclares: (policy: FormedPolicy, index: number) => boolean = (policy) =>
    policy.drafts.some((draft) => declaresRelations(metaparametersOf(draft.directive.id))),
): PolicyGraph {
  // Most policies have no relationship at all: nothing to build then.
  if (!policies.some(policyDeclares) && !bothEndsPresent(policies, fleetRelationships)) return NO_GRAPH;
  const policyOf = new Map<string, string>();
  for (const policy of policies)
    for (const draft of policy.drafts) policyOf.set(draft.directive.id, policy.id);
  const edges: PolicyEdge[] = [];
  const errors: NodeError[] = [];
  const warnings: string[] = [];
  const addEdge = (
    from: string,
    to: string,
    kind: RelationKind,
    directiveIds: readonly [string, string],
  ): void => {
    const fromPolicy = policyOf.get(from) as string;
    const toPolicy = policyOf.get(to) as string;
    if (fromPolicy === toPolicy) {
      warnings.push(
        `Relationship ${kind} between Directive[${directiveIds[0]}] and Directive[${directiveIds[1]}] is ignored: both are in policy ${fromPolicy}`,
      );
      return;
    }
    edges.push({
      from: fromPolicy,
      to: toPolicy,
      kind,
      refresh: kind === 'notify' || kind === 'subscribe' || kind === '~>',
      directiveIds,
    });
  };

  for (const directiveId of [...policyOf.keys()].sort(compareCodeUnits)) {
    const relations = metaparametersOf(directiveId);
    for (const kind of ['before', 'require', 'notify', 'subscribe'] as const) {
      if (relations[kind].length === 0) continue;
      // A set: its declared order must not change the node's errors (nor its bytes).
      for (const other of [...new Set(relations[kind])].sort(compareCodeUnits)) {
        if (!policyOf.has(other)) {
          if (!existingDirectives.has(other)) continue; // the validator reports unknown ids
          const dependency = kind === 'require' || kind === 'subscribe';
          errors.push({
            code: 'MISSING_DEPENDENCY',
            message: `Could not find ${dependency ? 'dependency' : 'dependent'} Directive[${other}] for Directive[${directiveId}]`,
            directiveIds: [directiveId, other],
          });
          continue;
        }
        if (kind === 'before' || kind === 'notify') addEdge(directiveId, other, kind, [directiveId, other]);
        else addEdge(other, directiveId, kind, [directiveId, other]);
      }
    }
  }
  for (const relationship of fleetRelationships) {
    if (policyOf.has(relationship.from) && policyOf.has(relationship.to)) {
      addEdge(relationship.from, relationship.to, relationship.kind, [relationship.from, relationship.to]);
    }
  }
  return { edges: dedupeEdges(edges), errors, warnings };
}

const NO_GRAPH: PolicyGraph = { edges: [], errors: [], warnings: [] };

type FleetRelationships = readonly { readonly from: string; readonly to: string }[];

/** The directives fleet-wide relationships name, per list of relationships. */
const relationshipEnds = new WeakMap<FleetRelationships, ReadonlySet<string>>();

/** Whether some fleet-wide relationship has both its ends among the policies' directives. */
function bothEndsPresent(policies: readonly FormedPolicy[], relationships: FleetRelationships): boolean {
  if (relationships.length === 0) return false;
  let ends = relationshipEnds.get(relationships);
  if (!ends) {
    ends = new Set(relationships.flatMap((relationship) => [relationship.from, relationship.to]));
    relationshipEnds.set(relationships, ends);
  }
  const present = new Set<string>();
  for (const policy of policies)
    for (const draft of policy.drafts) if (ends.has(draft.directive.id)) present.add(draft.directive.id);
  return relationships.some((relationship) => present.has(relationship.from) && present.has(relationship.to));
}

/** Whether a directive declares any metaparameter relationship (`before`, `require`, ...). */
export function declaresRelations(relations: RelationshipSource): boolean {
  return (
    relations.before.length +
      relations.require.length +
      relations.notify.length +
      relations.subscribe.length >
    0
  );
}

function dedupeEdges(edges: readonly PolicyEdge[]): PolicyEdge[] {
  const seen = new Set<string>();
  return edges.filter((edge) => {
    const key = `${edge.from}\u0000${edge.to}\u0000${edge.kind}\u0000${edge.directiveIds.join('\u0000')}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

const TITLE_HASH_SALT = 'NaCl, MgSO4 (salts) and then Directive[';

/** The key unrelated policies are sorted by, per ordering mode (semantics.md §3). */
export function orderingComparator(
  mode: OrderingMode,
  seed: number,
): (a: FormedPolicy, b: FormedPolicy) => number {
  const byNames = (a: FormedPolicy, b: FormedPolicy): number =>
    namesOnly(a.positionDraft, b.positionDraft) || compareCodeUnits(a.id, b.id);
  if (mode === 'alphanumeric') return byNames;
  const keyOf = mode === 'title-hash' ? titleHashKey : (draft: Draft) => randomKey(seed, draft);
  const cache = new Map<FormedPolicy, string>();
  const key = (policy: FormedPolicy): string => {
    let value = cache.get(policy);
    if (value === undefined) {
      value = keyOf(policy.positionDraft);
      cache.set(policy, value);
    }
    return value;
  };
  return (a, b) => compareCodeUnits(key(a), key(b)) || byNames(a, b);
}

export function orderingKeyText(mode: OrderingMode, seed: number, policy: FormedPolicy): string {
  const draft = policy.positionDraft;
  if (mode === 'title-hash') return `sha1 ${titleHashKey(draft)}`;
  if (mode === 'random') return `seeded ${randomKey(seed, draft).slice(0, 16)}`;
  return `(${JSON.stringify(draft.rule.name)}, ${JSON.stringify(draft.directive.name)})`;
}

function titleHashKey(draft: Draft): string {
  return createHash('sha1').update(`${TITLE_HASH_SALT}${draft.directive.id}]`).digest('hex');
}

/** A seeded shuffle that keys each policy on its own, so it does not depend on the other policies. */
function randomKey(seed: number, draft: Draft): string {
  return createHash('sha256').update(`${seed}:${draft.directive.id}`).digest('hex');
}

export interface OrderResult {
  readonly order: readonly FormedPolicy[];
  readonly errors: readonly NodeError[];
  /** Policy ids on a dependency cycle. */
  readonly onCycle: ReadonlySet<string>;
}

/**
 * Kahn's algorithm with a min-priority ready set: the topological order of the policy graph that
 * is smallest by the ordering key. Cycles are found with Tarjan's linear-time SCC pass and
 * reported in Puppet's words, one shortest cycle per strongly connected component.
 */
export function orderPolicies(
  policies: readonly FormedPolicy[],
  edges: readonly PolicyEdge[],
  compare: (a: FormedPolicy, b: FormedPolicy) => number,
): OrderResult {
  // Without edges the smallest topological order is the sorted order, and there is no cycle.
  if (edges.length === 0) return { order: [...policies].sort(compare), errors: [], onCycle: new Set() };
  const byId = new Map(policies.map((policy) => [policy.id, policy]));
  const successors = new Map<string, string[]>(mapList(policies, (policy) => [policy.id, []]));
  const inDegree = new Map<string, number>(mapList(policies, (policy) => [policy.id, 0]));
  const compareIds = (a: string, b: string): number =>
    compare(byId.get(a) as FormedPolicy, byId.get(b) as FormedPolicy);
  const seenEdges = new Set<string>();
  for (const edge of edges) {
    const key = `${edge.from}\u0000${edge.to}`;
    if (seenEdges.has(key)) continue;
    seenEdges.add(key);
    successors.get(edge.from)?.push(edge.to);
    inDegree.set(edge.to, (inDegree.get(edge.to) ?? 0) + 1);
  }
  for (const list of successors.values()) list.sort(compareIds);

  const cycles = findCycles([...byId.keys()].sort(compareIds), (id) => successors.get(id) ?? []);
  if (cycles.length > 0) {
    const lines = mapList(
      cycles,
      (cycle) =>
        `(${mapList(cycle, (id) => `Directive[${(byId.get(id) as FormedPolicy).positionDraft.directive.id}]`).join(' => ')})`,
    );
    return {
      order: [...policies].sort(compare),
      errors: [
        {
          code: 'DEPENDENCY_CYCLE',
          message: `Found ${cycles.length} dependency ${cycles.length === 1 ? 'cycle' : 'cycles'}:\n${lines.join('\n')}`,
          directiveIds: mapList(
            [...new Set(cycles.flat())],
            (id) => (byId.get(id) as FormedPolicy).positionDraft.directive.id,
          ),
        },
      ],
      onCycle: new Set(cycles.flat()),
    };
  }

  const ready = [...byId.keys()].filter((id) => inDegree.get(id) === 0).sort(compareIds);
  const order: FormedPolicy[] = [];
  while (ready.length > 0) {
    const next = ready.shift() as string;
    order.push(byId.get(next) as FormedPolicy);
    for (const successor of successors.get(next) ?? []) {
      const remaining = (inDegree.get(successor) ?? 0) - 1;
      inDegree.set(successor, remaining);
      if (remaining === 0) insertSorted(ready, successor, compareIds);
    }
  }
  return { order, errors: [], onCycle: new Set() };
}

/**
 * Every cycle, as one shortest closed path per non-trivial strongly connected component, starting
 * and ending at the component's smallest vertex. `vertices` come sorted by the ordering key.
 */
export function findCycles(
  vertices: readonly string[],
  successors: (vertex: string) => readonly string[],
): string[][] {
  const components = stronglyConnectedComponents(vertices, successors).filter(
    (component) => component.length > 1,
  );
  const rank = new Map(vertices.map((vertex, index) => [vertex, index]));
  const cycles = mapList(components, (component) => {
    const members = new Set(component);
    const start = [...component].sort((a, b) => (rank.get(a) ?? 0) - (rank.get(b) ?? 0))[0] as string;
    // Breadth-first from the start, inside the component, back to the start: a shortest cycle.
    const previous = new Map<string, string>();
    const queue = [start];
    let closing: string | undefined;
    while (queue.length > 0 && closing === undefined) {
      const vertex = queue.shift() as string;
      for (const next of successors(vertex)) {
        if (!members.has(next)) continue;
        if (next === start) {
          closing = vertex;
          break;
        }
        if (!previous.has(next)) {
          previous.set(next, vertex);
          queue.push(next);
        }
      }
    }
    const path = [start];
    for (let vertex = closing as string; vertex !== start; vertex = previous.get(vertex) as string)
      path.splice(1, 0, vertex);
    return [...path, start];
  });
  return cycles.sort((a, b) => (rank.get(a[0] as string) ?? 0) - (rank.get(b[0] as string) ?? 0));
}

/** Tarjan's algorithm, iterative so that long chains cannot overflow the stack. */
function stronglyConnectedComponents(
  vertices: readonly string[],
  successors: (vertex: string) => readonly string[],
): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let counter = 0;
  for (const root of vertices) {
    if (index.has(root)) continue;
    const work: { vertex: string; next: number }[] = [{ vertex: root, next: 0 }];
    index.set(root, counter);
    low.set(root, counter);
    counter++;
    stack.push(root);
    onStack.add(root);
    while (work.length > 0) {
      const frame = work[work.length - 1] as { vertex: string; next: number };
      const list = successors(frame.vertex);
      if (frame.next < list.length) {
        const next = list[frame.next++] as string;
        if (!index.has(next)) {
          index.set(next, counter);
          low.set(next, counter);
          counter++;
          stack.push(next);
          onStack.add(next);
          work.push({ vertex: next, next: 0 });
        } else if (onStack.has(next)) {
          low.set(frame.vertex, Math.min(low.get(frame.vertex) as number, index.get(next) as number));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent)
        low.set(parent.vertex, Math.min(low.get(parent.vertex) as number, low.get(frame.vertex) as number));
      if (low.get(frame.vertex) === index.get(frame.vertex)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop() as string;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.vertex);
        components.push(component);
      }
    }
  }
  return components;
}
