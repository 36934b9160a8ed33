import fc from 'fast-check';
import type { Criterion, Fleet, FleetNode, Group } from '../model/fleet';
import type { Json } from '../model/json';
import { matchesCriterion } from '../targeting/criteria';
import { validateFleet } from '../validation/validate';
import { GenerationEngine } from '../incremental/engine';
import { FleetIndex } from './fleet-index';
import { validateChangeSet } from './validate-change-set';
import { evaluateTarget } from './targets';

/**
 * Memberships and rule targets from the index (value and number indexes, per-node re-evaluation
 * after changes) against the plainest evaluation there is: every criterion on every node.
 */

const factValue: fc.Arbitrary<Json | undefined> = fc.oneof(
  fc.constant(undefined),
  fc.integer({ min: -3, max: 12 }),
  fc.constantFrom(2.5, 0, 7),
  fc.constantFrom('3', '12', '4.5', '1.10', 'abc', '', '7'),
  fc.constantFrom(true, null),
);

const operators = ['eq', 'neq', 'in', 'lt', 'le', 'gt', 'ge', 'exists', 'notExists', 'regex'] as const;

const criterion = (groupCount: number): fc.Arbitrary<Record<string, Json>> =>
  fc.oneof(
    fc
      .record({
        fact: fc.constantFrom('n', 's', 'nested.n'),
        op: fc.constantFrom(...operators),
        value: fc.oneof(fc.integer({ min: -2, max: 10 }), fc.constantFrom('3', '7', 'abc', '1.9')),
      })
      .map((raw): Record<string, Json> => {
        if (raw.op === 'exists' || raw.op === 'notExists') return { fact: raw.fact, op: raw.op };
        if (raw.op === 'in') return { fact: raw.fact, op: 'in', value: [raw.value, 3, '12'] };
        if (raw.op === 'regex') return { fact: raw.fact, op: 'regex', value: String(raw.value) };
        return raw as unknown as Record<string, Json>;
      }),
    fc.nat(groupCount).map((index): Record<string, Json> => ({ group: `g${index}` })),
  );

interface Shape {
  nodes: { n: Json | undefined; s: Json | undefined; nested: Json | undefined }[];
  groups: { all: boolean; criteria: Record<string, Json>[]; statics: number[] }[];
}

/** Numbers only: the number index then answers alone, without testing the criterion again. */
const numericFact: fc.Arbitrary<Json | undefined> = fc.oneof(
  fc.constant(undefined),
  fc.integer({ min: -3, max: 12 }),
);

const shape: fc.Arbitrary<Shape> = fc
  .tuple(fc.integer({ min: 1, max: 6 }), fc.boolean())
  .chain(([groupCount, numeric]) =>
    fc.record({
      nodes: fc.array(
        fc.record(
          numeric
            ? { n: numericFact, s: numericFact, nested: numericFact }
            : { n: factValue, s: factValue, nested: factValue },
        ),
        { minLength: 1, maxLength: 12 },
      ),
      groups: fc.array(
        fc.record({
          all: fc.boolean(),
          criteria: fc.array(criterion(groupCount), { maxLength: 3 }),
          statics: fc.array(fc.nat(11), { maxLength: 2 }),
        }),
        { minLength: groupCount, maxLength: groupCount },
      ),
    }),
  );

function nodeOf(index: number, facts: Shape['nodes'][number]): Record<string, unknown> {
  const values: Record<string, Json> = {};
  if (facts.n !== undefined) values['n'] = facts.n;
  if (facts.s !== undefined) values['s'] = facts.s;
  if (facts.nested !== undefined) values['nested'] = { n: facts.nested };
  return { id: `n${index}`, hostname: `n${index}`, facts: values };
}

function fleetOf(input: Shape): Fleet | undefined {
  const groups = input.groups.map((group, index) => {
    // Only groups of lower index are named: membership stays acyclic.
    const criteria = group.criteria.filter(
      (c) => !('group' in c) || Number(String(c['group']).slice(1)) < index,
    );
    return {
      id: `g${index}`,
      name: `g${index}`,
      nodes: [...new Set(group.statics.filter((n) => n < input.nodes.length).map((n) => `n${n}`))],
      criteria: group.all ? { all: criteria } : { any: criteria },
    };
  });
  const result = validateFleet({
    techniques: [],
    directives: [],
    rules: groups.map((group, index) => ({
      id: `r${index}`,
      name: `r${index}`,
      targets:
        index % 2 === 0
          ? [`group:${group.id}`]
          : { include: ['special:all'], exclude: [`group:${group.id}`] },
    })),
    groups,
    nodes: input.nodes.map((facts, index) => nodeOf(index, facts)),
  });
  return result.ok ? result.fleet : undefined;
}

/** Every group on every node, groups in id order (they only name lower ids). */
function naiveMembers(fleet: Fleet): Map<string, Set<string>> {
  const members = new Map<string, Set<string>>();
  const regexes = new Map<string, RegExp>();
  for (const group of fleet.groups) {
    const list: readonly Criterion[] = group.criteria
      ? 'all' in group.criteria
        ? group.criteria.all
        : group.criteria.any
      : [];
    const set = new Set<string>(group.nodes);
    for (const node of fleet.nodes) {
      if (list.length === 0) continue;
      const test = (c: Criterion): boolean =>
        'group' in c
          ? (members.get(c.group)?.has(node.id) ?? false)
          : matchesCriterion(c, node as FleetNode, regexes);
      if (group.criteria && 'all' in group.criteria ? list.every(test) : list.some(test)) set.add(node.id);
    }
    members.set(group.id, set);
  }
  return members;
}

function expectIndexMatches(index: FleetIndex, fleet: Fleet): void {
  const naive = naiveMembers(fleet);
  for (const group of fleet.groups as Group[]) {
    expect([...(index.members.get(group.id) ?? [])].sort()).toEqual([...(naive.get(group.id) ?? [])].sort());
  }
  const context = {
    nodeIds: fleet.nodes.map((node) => node.id),
    nodes: new Map(fleet.nodes.map((node) => [node.id, node])),
    members: naive,
    policyServers: new Set(['root']),
  };
  for (const rule of fleet.rules) {
    expect([...(index.ruleTargets.get(rule.id) ?? [])].sort()).toEqual(
      [...evaluateTarget(rule.targets, context)].sort(),
    );
  }
  for (const node of fleet.nodes) {
    const groups = fleet.groups.filter((group) => naive.get(group.id)?.has(node.id)).map((group) => group.id);
    expect(index.groupsOfNode.get(node.id)).toEqual([...groups].sort());
  }
}

describe('the dependency index', () => {
  it('builds the memberships and targets of a plain evaluation', () => {
    fc.assert(
      fc.property(shape, (input) => {
        const fleet = fleetOf(input);
        fc.pre(fleet !== undefined);
        expectIndexMatches(FleetIndex.build(fleet as Fleet), fleet as Fleet);
      }),
      { numRuns: 1000 },
    );
  });

  it('keeps them after node facts change, nodes come and go, and groups change', () => {
    fc.assert(
      fc.property(
        shape,
        fc.array(
          fc.record({
            node: fc.nat(20),
            facts: fc.record({ n: factValue, s: factValue, nested: factValue }),
            remove: fc.boolean(),
          }),
          {
            minLength: 1,
            maxLength: 6,
          },
        ),
        shape,
        (input, edits, other) => {
          const fleet = fleetOf(input);
          fc.pre(fleet !== undefined);
          const engine = GenerationEngine.fromFleet(fleet as Fleet);
          for (const edit of edits) {
            const id = `n${edit.node}`;
            const listed =
              engine.compiled.groups.size > 0 &&
              [...engine.compiled.groups.values()].some((g) => g.nodes.includes(id));
            const change =
              edit.remove && engine.compiled.nodes.has(id) && !listed
                ? { delete: { nodes: [id] } }
                : { upsert: { nodes: [nodeOf(edit.node, edit.facts)] } };
            expect(engine.apply(change).ok).toBe(true);
          }
          // Replace the groups' criteria with another draw's (same ids where they exist).
          const replacement = fleetOf({ ...other, nodes: input.nodes });
          if (replacement) {
            const groups = replacement.groups
              .filter((group) => engine.compiled.groups.has(group.id))
              .map((group) => ({
                ...group,
                nodes: group.nodes.filter((id) => engine.compiled.nodes.has(id)),
              }));
            engine.apply({ upsert: { groups } });
          }
          expectIndexMatches(engine.compiled as FleetIndex, engine.toFleet());
        },
      ),
      { numRuns: 300 },
    );
  });

  it('keeps the group structure of a fresh build when groups change only their properties, static nodes or enabling', () => {
    fc.assert(
      fc.property(
        shape,
        fc.array(
          fc.record({
            group: fc.nat(5),
            property: fc.integer({ min: 0, max: 3 }),
            enabled: fc.boolean(),
            statics: fc.array(fc.nat(11), { maxLength: 2 }),
            criteriaToo: fc.boolean(),
          }),
          { minLength: 1, maxLength: 5 },
        ),
        fc.array(
          fc.record({
            node: fc.nat(11),
            facts: fc.record({ n: factValue, s: factValue, nested: factValue }),
          }),
          {
            maxLength: 4,
          },
        ),
        shape,
        (input, edits, nodeEdits, other) => {
          const fleet = fleetOf(input);
          fc.pre(fleet !== undefined);
          const index = FleetIndex.build(fleet as Fleet);
          const replacement = fleetOf({ ...other, nodes: input.nodes });
          for (const edit of edits) {
            const before = index.groups.get(`g${edit.group}`);
            if (!before) continue;
            const criteria = edit.criteriaToo
              ? replacement?.groups.find((g) => g.id === before.id)?.criteria
              : undefined;
            const group: Group = {
              ...before,
              enabled: edit.enabled,
              properties: { p: edit.property },
              nodes: [...new Set(edit.statics.filter((n) => index.nodes.has(`n${n}`)).map((n) => `n${n}`))],
              ...(criteria ? { criteria } : {}),
            };
            const change = validateChangeSet({ upsert: { groups: [group] } }, index);
            if (change.ok) index.apply(change.change);
          }
          // Later node changes read the group structure the index kept.
          for (const edit of nodeEdits) {
            if (!index.nodes.has(`n${edit.node}`)) continue;
            const change = validateChangeSet({ upsert: { nodes: [nodeOf(edit.node, edit.facts)] } }, index);
            if (change.ok) index.apply(change.change);
          }
          const fresh = FleetIndex.build(index.toFleet());
          expect(index.ancestors).toEqual(fresh.ancestors);
          expect(index.members).toEqual(fresh.members);
          expect(index.groupsOfNode).toEqual(fresh.groupsOfNode);
          expect(index.ruleTargets).toEqual(fresh.ruleTargets);
          expect(index.rulesOfNode).toEqual(fresh.rulesOfNode);
          expect(index.inactiveRules).toEqual(fresh.inactiveRules);
        },
      ),
      { numRuns: 300 },
    );
  });
});
