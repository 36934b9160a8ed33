import { compileFleet, generateNode, validateFleet } from '@policygen/engine';
import type { CompiledFleet, Fleet } from '@policygen/engine';
import type { FleetFile, GroupInput } from '../fleet-file';
import { buildBenchFleet, buildBenchNodes } from './bench-fleet';

const SMALL = { nodes: 2000, groups: 100, directives: 200, techniques: 20, rules: 40, relays: 3 } as const;
const OPTIONS = { generatedAt: 0, revision: 1 } as const;

function valid(fleet: FleetFile): Fleet {
  const result = validateFleet(fleet);
  if (!result.ok) throw new Error(result.issues.map((issue) => `${issue.path}: ${issue.message}`).join('\n'));
  return result.fleet;
}

/** Nodes whose enabled rules (through enabled groups) carry the directive. */
function nodesReached(compiled: CompiledFleet, directiveId: string): number {
  const carriers = new Set(
    [...compiled.rules.values()]
      .filter((rule) => rule.directives.includes(directiveId))
      .map((rule) => rule.id),
  );
  return compiled.nodeIds.filter((nodeId) =>
    (compiled.rulesOfNode.get(nodeId) ?? []).some((ruleId) => carriers.has(ruleId)),
  ).length;
}

function withNode(
  fleet: FleetFile,
  nodeId: string,
  change: (node: FleetFile['nodes'][number]) => void,
): FleetFile {
  const copy = structuredClone(fleet);
  const node = copy.nodes.find((candidate) => candidate.id === nodeId);
  if (!node) throw new Error(`no node ${nodeId}`);
  change(node);
  return copy;
}

describe('the benchmark fleet', () => {
  const { fleet, landmarks } = buildBenchFleet(SMALL);
  const compiled = compileFleet(valid(fleet));

  it('is deterministic by seed and sizes', () => {
    expect(buildBenchFleet(SMALL)).toEqual(buildBenchFleet(SMALL));
    const other = buildBenchFleet({ ...SMALL, seed: 2 });
    expect(other.fleet.nodes).not.toEqual(fleet.nodes);
    expect(other.fleet.rules).not.toEqual(fleet.rules);
    // A node depends on its index only: a bigger fleet starts with the same nodes.
    const bigger = buildBenchFleet({ ...SMALL, nodes: SMALL.nodes + 50 });
    expect(bigger.fleet.nodes.slice(0, SMALL.nodes)).toEqual(fleet.nodes);
  });

  it('is plain JSON that shares nothing between calls', () => {
    expect(JSON.parse(JSON.stringify(fleet))).toEqual(fleet);
    const first = buildBenchFleet(SMALL);
    first.fleet.techniques[0]?.promises?.splice(0);
    (first.fleet.nodes[0]?.facts as Record<string, unknown>)['location'] = 'changed';
    expect(buildBenchFleet(SMALL).fleet).toEqual(fleet);
  });

  it('has the requested sizes and unique ids', () => {
    expect(fleet.nodes).toHaveLength(SMALL.nodes);
    expect(fleet.groups).toHaveLength(SMALL.groups);
    expect(fleet.directives).toHaveLength(SMALL.directives);
    expect(fleet.rules).toHaveLength(SMALL.rules);
    expect(fleet.relays).toHaveLength(SMALL.relays);
    expect(new Set(fleet.techniques.map((technique) => technique.id)).size).toBe(SMALL.techniques);
    for (const collection of ['directives', 'rules', 'groups', 'nodes', 'relays'] as const) {
      const ids = fleet[collection].map((item) => item.id);
      expect(new Set(ids).size).toBe(ids.length);
    }
  });

  it('has the default sizes of architecture.md without options', () => {
    const big = buildBenchFleet().fleet;
    expect({
      nodes: big.nodes.length,
      groups: big.groups.length,
      directives: big.directives.length,
      techniques: new Set(big.techniques.map((technique) => technique.id)).size,
      rules: big.rules.length,
      relays: big.relays.length,
    }).toEqual({ nodes: 100_000, groups: 1000, directives: 2000, techniques: 100, rules: 400, relays: 10 });
  });

  it('rejects sizes too small for its fixed families', () => {
    expect(() => buildBenchFleet({ ...SMALL, groups: 10 })).toThrow(RangeError);
    expect(() => buildBenchFleet({ ...SMALL, nodes: -1 })).toThrow(RangeError);
  });

  it('is a valid fleet for the engine', () => {
    const result = validateFleet(fleet);
    expect(result.ok ? [] : result.issues).toEqual([]);
  });

  it('generates every node ok or ignored, with a few ignored and empty-policies nodes', () => {
    const statuses: Record<string, number> = {};
    const failures: { nodeId: string; errors: unknown }[] = [];
    let policies = 0;
    let enabled = 0;
    for (const nodeId of compiled.nodeIds) {
      const bundle = generateNode(compiled, nodeId, OPTIONS);
      statuses[bundle.status] = (statuses[bundle.status] ?? 0) + 1;
      if (bundle.status === 'failed') failures.push({ nodeId, errors: bundle.errors });
      if (compiled.nodes.get(nodeId)?.state === 'enabled') {
        enabled++;
        policies += bundle.manifest?.policies.length ?? 0;
      }
    }
    expect(failures.slice(0, 5)).toEqual([]);
    expect(Object.keys(statuses).sort()).toEqual(['ignored', 'ok']);
    expect(statuses['ignored']).toBeLessThan(SMALL.nodes * 0.02);
    expect(fleet.nodes.filter((node) => node.state === 'empty-policies').length).toBeGreaterThan(0);
    expect(policies / enabled).toBeGreaterThan(5);
    expect(policies / enabled).toBeLessThan(40);
  });

  it('carries every directive on at least one rule, and uses every policy generation', () => {
    const carried = new Set(fleet.rules.flatMap((rule) => rule.directives ?? []));
    expect(fleet.directives.filter((directive) => !carried.has(directive.id))).toEqual([]);
    for (const rule of fleet.rules) expect(rule.directives?.length ?? 0).toBeGreaterThan(0);
    const kinds = new Set(
      fleet.techniques.map((technique) =>
        technique.multiInstance ? (technique.policyGeneration ?? 'merged') : 'unique',
      ),
    );
    expect([...kinds].sort()).toEqual(['merged', 'separated', 'separated-with-parameters', 'unique']);
  });

  it('has some of everything the engine handles: subgroups, static groups, versions, relationships', () => {
    const subgroups = fleet.groups.filter((group) =>
      JSON.stringify(group.criteria ?? {}).includes('"group"'),
    );
    const statics = fleet.groups.filter((group) => (group.nodes ?? []).length > 0);
    expect(subgroups.length).toBeGreaterThanOrEqual(3);
    expect(statics.length).toBeGreaterThanOrEqual(3);
    expect(fleet.groups.some((group) => group.enabled === false)).toBe(true);
    expect(fleet.rules.some((rule) => rule.enabled === false)).toBe(true);
    expect(fleet.relationships.length).toBeGreaterThan(0);
    const metaparameters = fleet.directives.filter((directive) =>
      ['before', 'require', 'notify', 'subscribe'].some(
        (kind) => ((directive as Record<string, unknown>)[kind] as string[] | undefined)?.length,
      ),
    );
    expect(metaparameters.length).toBeGreaterThan(0);
    const relayNodes = fleet.nodes.filter((node) => fleet.relays.some((relay) => relay.id === node.id));
    expect(relayNodes).toHaveLength(SMALL.relays);
    expect(fleet.relays.some((relay) => relay.policyServer !== 'root')).toBe(true);
  });

  it('reaches 100%, about 10% and about 1% of the nodes with the landmark directives', () => {
    const share = (directiveId: string): number =>
      nodesReached(compiled, directiveId) / compiled.nodeIds.length;
    expect(share(landmarks.directiveOnAll)).toBe(1);
    expect(share(landmarks.directiveOnTenPercent)).toBeGreaterThan(0.08);
    expect(share(landmarks.directiveOnTenPercent)).toBeLessThan(0.12);
    expect(share(landmarks.directiveOnOnePercent)).toBeGreaterThan(0.005);
    expect(share(landmarks.directiveOnOnePercent)).toBeLessThan(0.02);
  });

  it('skews directive reach: most directives reach few nodes, a handful reach most', () => {
    const shares = fleet.directives.map(
      (directive) => nodesReached(compiled, directive.id) / compiled.nodeIds.length,
    );
    expect(shares.filter((share) => share < 0.05).length).toBeGreaterThan(shares.length / 2);
    expect(shares.filter((share) => share > 0.5).length).toBeGreaterThan(0);
  });

  it('names a property node whose property may change to any string', () => {
    const { nodeId, property } = landmarks.nodeForProperty;
    const node = fleet.nodes.find((candidate) => candidate.id === nodeId);
    expect(node?.state).toBe('enabled');
    expect(fleet.relays.map((relay) => relay.id)).not.toContain(nodeId);
    expect(node?.properties?.[property]).toBeDefined();
    const before = generateNode(compiled, nodeId, OPTIONS);
    const changed = compileFleet(
      valid(
        withNode(
          fleet,
          nodeId,
          (target) => (target.properties = { ...target.properties, [property]: 'x"y' }),
        ),
      ),
    );
    const after = generateNode(changed, nodeId, OPTIONS);
    expect(after.status).toBe('ok');
    expect(after.hash).not.toBe(before.hash);
    expect(changed.groupsOfNode.get(nodeId)).toEqual(compiled.groupsOfNode.get(nodeId));
  });

  it('names a node and facts that move it between exactly the stated groups', () => {
    const { nodeId, facts, groupsLeft, groupsJoined } = landmarks.nodeFlippingGroup;
    expect(groupsLeft.length + groupsJoined.length).toBeGreaterThan(0);
    const changed = compileFleet(
      valid(withNode(fleet, nodeId, (node) => (node.facts = structuredClone(facts)))),
    );
    const before = new Set(compiled.groupsOfNode.get(nodeId));
    const after = new Set(changed.groupsOfNode.get(nodeId));
    expect([...before].filter((id) => !after.has(id)).sort()).toEqual(groupsLeft);
    expect([...after].filter((id) => !before.has(id)).sort()).toEqual(groupsJoined);
    expect(generateNode(changed, nodeId, OPTIONS).status).toBe('ok');
  });

  it('names a targeted group whose replacement criteria change its membership by about 1%', () => {
    const { groupId, criteria } = landmarks.groupForCriteria;
    expect(
      fleet.rules.some(
        (rule) => rule.enabled !== false && JSON.stringify(rule.targets).includes(`"group:${groupId}"`),
      ),
    ).toBe(true);
    const copy = structuredClone(fleet);
    (copy.groups.find((group) => group.id === groupId) as GroupInput).criteria = structuredClone(criteria);
    const changed = compileFleet(valid(copy));
    const before = compiled.members.get(groupId) ?? new Set<string>();
    const after = changed.members.get(groupId) ?? new Set<string>();
    const moved =
      [...before].filter((id) => !after.has(id)).length + [...after].filter((id) => !before.has(id)).length;
    expect(moved / compiled.nodeIds.length).toBeGreaterThan(0.005);
    expect(moved / compiled.nodeIds.length).toBeLessThan(0.02);
  });

  it('names a global parameter that directives use', () => {
    expect(fleet.parameters[landmarks.parameterName]).toBeDefined();
    const users = fleet.directives.filter((directive) =>
      JSON.stringify(directive.parameters ?? {}).includes(`\${rudder.param.${landmarks.parameterName}}`),
    );
    expect(users.length).toBeGreaterThan(0);
  });
});

describe('the benchmark fleet at the default structure (2,000 nodes)', () => {
  const { fleet } = buildBenchFleet({ nodes: 2000 });
  const compiled = compileFleet(valid(fleet));

  it('names in a metaparameter only enabled multi-instance directives of every rule holding the naming one', () => {
    const directives = new Map(fleet.directives.map((directive) => [directive.id, directive]));
    const multiInstance = new Set(
      fleet.techniques.filter((technique) => technique.multiInstance).map((technique) => technique.id),
    );
    let named = 0;
    for (const directive of fleet.directives) {
      const others = [
        ...(directive.before ?? []),
        ...(directive.require ?? []),
        ...(directive.notify ?? []),
        ...(directive.subscribe ?? []),
      ];
      for (const other of others) {
        named++;
        const target = directives.get(other);
        expect({
          other,
          enabled: target?.enabled !== false,
          multi: multiInstance.has(target?.technique ?? ''),
        }).toEqual({ other, enabled: true, multi: true });
        for (const rule of fleet.rules.filter((candidate) => candidate.directives?.includes(directive.id)))
          expect({ rule: rule.id, names: other, carried: rule.directives?.includes(other) }).toEqual({
            rule: rule.id,
            names: other,
            carried: true,
          });
      }
    }
    expect(named).toBeGreaterThanOrEqual(10);
  });

  it('orders techniques acyclically through every relationship, so that no node can have a cycle', () => {
    const techniqueOf = new Map(fleet.directives.map((directive) => [directive.id, directive.technique]));
    const edges = new Map<string, Set<string>>();
    const edge = (from: string, to: string): void => {
      const [a, b] = [techniqueOf.get(from) ?? from, techniqueOf.get(to) ?? to];
      edges.set(a, (edges.get(a) ?? new Set()).add(b));
    };
    for (const directive of fleet.directives) {
      for (const other of [...(directive.before ?? []), ...(directive.notify ?? [])])
        edge(directive.id, other);
      for (const other of [...(directive.require ?? []), ...(directive.subscribe ?? [])])
        edge(other, directive.id);
    }
    for (const relationship of fleet.relationships) edge(relationship.from, relationship.to);
    const state = new Map<string, 'open' | 'done'>();
    const cycles: string[] = [];
    const visit = (technique: string, path: string[]): void => {
      if (state.get(technique) === 'done') return;
      if (state.get(technique) === 'open') {
        cycles.push([...path, technique].join(' -> '));
        return;
      }
      state.set(technique, 'open');
      for (const next of edges.get(technique) ?? []) visit(next, [...path, technique]);
      state.set(technique, 'done');
    };
    for (const technique of edges.keys()) visit(technique, []);
    expect(edges.size).toBeGreaterThan(5);
    expect(cycles).toEqual([]);
  });

  it('generates a sample of its nodes ok or ignored', () => {
    const failures: { nodeId: string; errors: unknown }[] = [];
    for (let index = 0; index < compiled.nodeIds.length; index += 4) {
      const nodeId = compiled.nodeIds[index] as string;
      const bundle = generateNode(compiled, nodeId, OPTIONS);
      if (bundle.status === 'failed') failures.push({ nodeId, errors: bundle.errors });
    }
    expect(failures.slice(0, 5)).toEqual([]);
  });
});

describe('extra benchmark nodes', () => {
  it('are deterministic, never collide with the fleet, and generate like the fleet’s nodes', () => {
    const { fleet } = buildBenchFleet(SMALL);
    const extra = buildBenchNodes({ ...SMALL, count: 100, startIndex: SMALL.nodes });
    expect(extra).toEqual(buildBenchNodes({ ...SMALL, count: 100, startIndex: SMALL.nodes }));
    expect(extra).toHaveLength(100);
    const ids = new Set(fleet.nodes.map((node) => node.id));
    expect(extra.filter((node) => ids.has(node.id))).toEqual([]);
    const grown = compileFleet(valid({ ...fleet, nodes: [...fleet.nodes, ...extra] }));
    const statuses = extra.map((node) => generateNode(grown, node.id, OPTIONS).status);
    expect(statuses.filter((status) => status === 'failed')).toEqual([]);
    expect(statuses.filter((status) => status === 'ok').length).toBeGreaterThan(90);
  });

  it('refuse a start index inside the fleet’s own indexes', () => {
    expect(() => buildBenchNodes({ ...SMALL, count: 10, startIndex: 0 })).toThrow(RangeError);
  });
});
