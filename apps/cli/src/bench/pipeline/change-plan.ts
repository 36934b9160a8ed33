import type { CompiledFleet, Directive, FleetNode, Group, Json } from '@policygen/engine';
import type { BenchLandmarks } from '@policygen/fleets';
import { mulberry32 } from '@policygen/fleets';

export type ChangeKind = 'node-property' | 'directive-parameter' | 'group-property';

/** One change set of the steady load, and what it acts on. */
export interface PlannedChange {
  readonly index: number;
  readonly kind: ChangeKind;
  readonly target: string;
  /** Nodes the target reaches in the configuration (for a node's property: 1). */
  readonly reach: number;
  readonly changeSet: unknown;
}

/** The reach ranges of the mix, measured on the 10,000-node synthetic fleet. */
const REFERENCE_NODES = 10_000;
const DIRECTIVE_REACH = { min: 50, max: 172 };
const GROUP_REACH = { min: 100, max: 197 };
/**
 * The property a group's change sets write, one name per group: a name two overlapping groups both
 * set to different values would be a conflict (semantics.md), failing their common nodes. No node
 * property or criterion of the synthetic fleet uses these names.
 */
export function groupPropertyName(groupId: string): string {
  return `bench_pipeline_${groupId.replace(/[^A-Za-z0-9]/g, '_')}`;
}

export interface Reach {
  readonly id: string;
  readonly reach: number;
}

export interface SteadyPlan {
  readonly changes: readonly PlannedChange[];
  readonly directives: readonly Reach[];
  readonly groups: readonly Reach[];
  /** The reach ranges used, scaled to the fleet's size. */
  readonly directiveRange: { readonly min: number; readonly max: number };
  readonly groupRange: { readonly min: number; readonly max: number };
}

function scaled(range: { min: number; max: number }, nodes: number): { min: number; max: number } {
  const factor = nodes / REFERENCE_NODES;
  const min = Math.max(1, Math.round(range.min * factor));
  return { min, max: Math.max(min, Math.round(range.max * factor)) };
}

/** The candidates in the range or, when none is, the five nearest to it. */
function withinRange(candidates: readonly Reach[], range: { min: number; max: number }): Reach[] {
  const inside = candidates.filter(
    (candidate) => candidate.reach >= range.min && candidate.reach <= range.max,
  );
  if (inside.length > 0) return inside;
  const distance = (reach: number): number =>
    reach < range.min ? range.min - reach : Math.max(0, reach - range.max);
  return [...candidates]
    .filter((candidate) => candidate.reach > 0)
    .sort((a, b) => distance(a.reach) - distance(b.reach) || a.id.localeCompare(b.id))
    .slice(0, 5);
}

/**
 * Each enabled directive of a multi-instance technique and the nodes its rules reach: a disabled
 * directive, or one of a unique technique that a higher-priority directive shadows, would change
 * no bundle.
 */
export function directiveReach(compiled: CompiledFleet): Reach[] {
  const reaches: Reach[] = [];
  for (const [directiveId, directive] of compiled.directives) {
    const technique = compiled.techniques.get(directive.technique);
    const versions = technique ? [...technique.values()] : [];
    if (!directive.enabled || versions.length === 0 || !versions.every((version) => version.multiInstance))
      continue;
    const nodes = new Set<string>();
    for (const ruleId of compiled.rulesOfDirective.get(directiveId) ?? [])
      for (const nodeId of compiled.ruleTargets.get(ruleId) ?? []) nodes.add(nodeId);
    reaches.push({ id: directiveId, reach: nodes.size });
  }
  return reaches;
}

export function groupReach(compiled: CompiledFleet): Reach[] {
  return [...compiled.groups.values()]
    .filter((group) => group.enabled)
    .map((group) => ({ id: group.id, reach: compiled.members.get(group.id)?.size ?? 0 }));
}

/**
 * The steady load's change sets, in order: 80% one node's property, 10% a directive's parameter
 * (a directive reaching 50–172 of 10,000 nodes), 10% a group property (a group of 100–197 of
 * 10,000), the ranges scaled to the fleet. Each writes a value never written before, so each
 * changes the bundles it reaches whatever order they commit in. Deterministic for a seed.
 */
export function planSteadyChanges(
  compiled: CompiledFleet,
  landmarks: BenchLandmarks,
  options: { readonly count: number; readonly seed: number },
): SteadyPlan {
  const random = mulberry32(options.seed * 7_907 + 13);
  const nodes = compiled.nodeIds.length;
  const directiveRange = scaled(DIRECTIVE_REACH, nodes);
  const groupRange = scaled(GROUP_REACH, nodes);
  const directives = withinRange(directiveReach(compiled), directiveRange).filter((reach) =>
    Object.values(entity(compiled.directives, reach.id).parameters).some(
      (value) => typeof value === 'string',
    ),
  );
  const groups = withinRange(groupReach(compiled), groupRange);
  const ordinaryNodes = compiled.nodeIds.filter(
    (nodeId) => !compiled.policyServers.has(nodeId) && entity(compiled.nodes, nodeId).state === 'enabled',
  );
  if (ordinaryNodes.length === 0 || directives.length === 0 || groups.length === 0)
    throw new Error(
      'the synthetic fleet is too small for the steady load (no node, directive or group to change)',
    );

  const currentNodes = new Map<string, FleetNode>();
  const currentGroups = new Map<string, Group>();
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const changes: PlannedChange[] = [];
  for (let index = 0; index < options.count; index++) {
    const marker = `bench-${options.seed}-${index}`;
    const roll = random();
    if (roll < 0.8) {
      const nodeId = pick(ordinaryNodes);
      const node = currentNodes.get(nodeId) ?? entity(compiled.nodes, nodeId);
      const changed = withProperty(node, landmarks.nodeForProperty.property, marker);
      currentNodes.set(nodeId, changed);
      changes.push({
        index,
        kind: 'node-property',
        target: nodeId,
        reach: 1,
        changeSet: { upsert: { nodes: [changed] } },
      });
    } else if (roll < 0.9) {
      const { id, reach } = pick(directives);
      const changed = withParameter(entity(compiled.directives, id), marker);
      changes.push({
        index,
        kind: 'directive-parameter',
        target: id,
        reach,
        changeSet: { upsert: { directives: [changed] } },
      });
    } else {
      const { id, reach } = pick(groups);
      const group = currentGroups.get(id) ?? entity(compiled.groups, id);
      const changed: Group = {
        ...group,
        properties: { ...group.properties, [groupPropertyName(id)]: marker },
      };
      currentGroups.set(id, changed);
      changes.push({
        index,
        kind: 'group-property',
        target: id,
        reach,
        changeSet: { upsert: { groups: [changed] } },
      });
    }
  }
  return { changes, directives, groups, directiveRange, groupRange };
}

function entity<T>(map: ReadonlyMap<string, T>, id: string): T {
  const value = map.get(id);
  if (value === undefined) throw new Error(`the synthetic fleet has no ${id}`);
  return value;
}

function withProperty(node: FleetNode, name: string, value: Json): FleetNode {
  return { ...node, properties: { ...node.properties, [name]: value } };
}

/** The directive with its first string parameter set to its original value and the marker. */
function withParameter(directive: Directive, marker: string): Directive {
  const name = Object.keys(directive.parameters).find((key) => typeof directive.parameters[key] === 'string');
  if (name === undefined) throw new Error(`directive ${directive.id} has no string parameter`);
  return {
    ...directive,
    parameters: { ...directive.parameters, [name]: `${String(directive.parameters[name])} ${marker}` },
  };
}
