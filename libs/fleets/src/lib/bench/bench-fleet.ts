import type { Json } from '@policygen/engine';
import type { CriteriaInput, FleetFile, NodeInput } from '../fleet-file';
import { BENCH_PARAMETERS, LANDMARK_PARAMETER, LANDMARK_PROPERTY, LOCATIONS } from './catalog';
import { benchDirectives, LANDMARK_DIRECTIVES, directiveId } from './directives';
import type { BenchGroup } from './groups';
import { benchGroups, CRITERIA_REPLACEMENT, groupsOfNode, LANDMARK_GROUPS } from './groups';
import { benchNode, benchRelays, relayNode } from './nodes';
import { benchRules } from './rules';
import type { BenchFleetOptions, BenchSizes } from './sizes';
import { resolveSizes } from './sizes';
import { benchTechniques } from './techniques';

export type { BenchFleetOptions } from './sizes';

/** Entities of the benchmark fleet that the benchmark's change scenarios act on. */
export interface BenchLandmarks {
  /**
   * Directive ids whose nodes are (about) 1%, 10% and 100% of the fleet's nodes, through enabled
   * rules and enabled groups. Each sits on one rule only, and on a multi-instance technique.
   */
  directiveOnOnePercent: string;
  directiveOnTenPercent: string;
  directiveOnAll: string;
  /**
   * An ordinary node (state enabled, not a relay) and a property it has, safe to change to any
   * string: directives read it with a default, no group criterion looks at it.
   */
  nodeForProperty: { nodeId: string; property: string };
  /** A node, and facts that, replacing its facts, make it leave and join these groups (exactly). */
  nodeFlippingGroup: {
    nodeId: string;
    facts: Record<string, Json>;
    groupsLeft: string[];
    groupsJoined: string[];
  };
  /** A group targeted by a rule, and criteria that grow it by 1% of the ordinary nodes. */
  groupForCriteria: { groupId: string; criteria: CriteriaInput };
  /** A global parameter that directives use through `${rudder.param.NAME}`. */
  parameterName: string;
}

export interface BenchFleet {
  fleet: FleetFile;
  landmarks: BenchLandmarks;
}

/**
 * A synthetic fleet for `policygen bench` (architecture.md, "Performance targets"): by default
 * 100,000 nodes, 1,000 groups, 2,000 directives on 100 techniques, 400 rules, 10 relays.
 * Deterministic: the same options give deep-equal values. The sizes are skewed as real fleets
 * are: a handful of rules reach every node, most directives reach a few hundred.
 */
export function buildBenchFleet(options: BenchFleetOptions = {}): BenchFleet {
  const sizes = resolveSizes(options);
  const techniques = benchTechniques(sizes);
  const groups = benchGroups(sizes);
  const directives = benchDirectives(sizes, techniques);
  const { rules, relationships } = benchRules(sizes, groups, directives);

  const nodes: NodeInput[] = [];
  for (let index = 0; index < sizes.relays; index++) nodes.push(relayNode(sizes.relays, index));
  const ordinary = sizes.nodes - sizes.relays;
  for (let index = 0; index < ordinary; index++) nodes.push(benchNode(sizes.seed, sizes.relays, index));

  const fleet: FleetFile = {
    settings: { ordering: 'alphanumeric', orderingSeed: 0 },
    parameters: { ...BENCH_PARAMETERS },
    techniques: techniques.flatMap((technique) => technique.inputs),
    directives: directives.map((directive) => directive.input),
    relationships,
    rules,
    groups: groups.map((group) => group.input),
    nodes,
    relays: benchRelays(sizes.relays),
  };
  return { fleet, landmarks: benchLandmarks(sizes, groups) };
}

/**
 * Extra ordinary nodes (for an "add 1,000 nodes" scenario), indexes `startIndex` to
 * `startIndex + count - 1`, drawn like the fleet's own. The fleet's ordinary nodes have indexes
 * below `nodes - relays`, so `startIndex` must be at least that.
 */
export function buildBenchNodes(
  options: BenchFleetOptions & { count: number; startIndex: number },
): NodeInput[] {
  const { count, startIndex, ...rest } = options;
  const sizes = resolveSizes(rest);
  const used = sizes.nodes - sizes.relays;
  if (!Number.isSafeInteger(count) || count < 0)
    throw new RangeError('buildBenchNodes: count must be a non-negative integer');
  if (!Number.isSafeInteger(startIndex) || startIndex < used)
    throw new RangeError(`buildBenchNodes: startIndex must be at least ${used}, past the fleet's own nodes`);
  return Array.from({ length: count }, (_, offset) =>
    benchNode(sizes.seed, sizes.relays, startIndex + offset),
  );
}

function benchLandmarks(sizes: BenchSizes, groups: readonly BenchGroup[]): BenchLandmarks {
  const ordinary = sizes.nodes - sizes.relays;
  const staticMembers = new Set(groups.flatMap((group) => group.input.nodes ?? []));
  // Nodes are pure functions of their index: look for suitable ones without building the fleet.
  const find = (start: number, accept: (node: NodeInput) => boolean): NodeInput => {
    for (let step = 0; step < ordinary; step++) {
      const node = benchNode(sizes.seed, sizes.relays, (start + step) % ordinary);
      if (node.state === 'enabled' && accept(node)) return node;
    }
    throw new Error('bench fleet: no node fits a landmark');
  };

  const propertyNode = find(
    Math.floor(ordinary / 2),
    (node) => node.properties?.[LANDMARK_PROPERTY] !== undefined,
  );

  const flipping = find(Math.floor(ordinary / 3), (node) => !staticMembers.has(node.id));
  const location = String(flipping.facts?.['location']);
  const next =
    LOCATIONS[(LOCATIONS.findIndex((candidate) => candidate.id === location) + 1) % LOCATIONS.length];
  const facts: Record<string, Json> = {
    ...structuredClone(flipping.facts ?? {}),
    location: next?.id ?? location,
  };
  const before = groupsOfNode(flipping, groups);
  const after = groupsOfNode({ ...flipping, facts }, groups);

  return {
    directiveOnOnePercent: directiveId(LANDMARK_DIRECTIVES.one),
    directiveOnTenPercent: directiveId(LANDMARK_DIRECTIVES.ten),
    directiveOnAll: directiveId(LANDMARK_DIRECTIVES.all),
    nodeForProperty: { nodeId: propertyNode.id, property: LANDMARK_PROPERTY },
    nodeFlippingGroup: {
      nodeId: flipping.id,
      facts,
      groupsLeft: [...before].filter((id) => !after.has(id)).sort(),
      groupsJoined: [...after].filter((id) => !before.has(id)).sort(),
    },
    groupForCriteria: { groupId: LANDMARK_GROUPS.criteria, criteria: structuredClone(CRITERIA_REPLACEMENT) },
    parameterName: LANDMARK_PARAMETER,
  };
}
