import fc from 'fast-check';
import type { Fleet, Group } from '../model/fleet';
import { formatJsonPath } from '../validation/json-path';
import type { PathSegment } from '../validation/json-path';
import { checkGroupCycles, validateFleet } from '../validation/validate';
import { FleetIndex } from './fleet-index';
import { hasGroupCycle } from './membership';
import { validateChangeSet } from './validate-change-set';

/**
 * A change set is refused for a group cycle exactly as a search through every group would refuse
 * it, though the search is skipped when the change cannot make one.
 */

const GROUPS = 6;

const groupDraw = fc.record({
  id: fc.nat(GROUPS - 1),
  all: fc.boolean(),
  references: fc.array(fc.nat(GROUPS - 1), { maxLength: 3 }),
  property: fc.nat(2),
});
type GroupDraw = typeof groupDraw extends fc.Arbitrary<infer T> ? T : never;

function groupOf(draw: GroupDraw, lowerOnly: boolean): Record<string, unknown> {
  const criteria = draw.references
    .filter((reference) => !lowerOnly || reference < draw.id)
    .map((reference) => ({ group: `g${reference}` }));
  return {
    id: `g${draw.id}`,
    name: `g${draw.id}`,
    properties: { p: draw.property },
    criteria: draw.all ? { all: criteria } : { any: criteria },
  };
}

/** Groups naming only groups of lower index: no cycle. */
function acyclicFleet(draws: readonly GroupDraw[]): Fleet | undefined {
  const byId = new Map(draws.map((draw) => [draw.id, groupOf(draw, true)]));
  const result = validateFleet({
    techniques: [],
    directives: [],
    rules: [],
    groups: [...byId.values()],
    nodes: [],
  });
  return result.ok ? result.fleet : undefined;
}

function cycleIssues(issues: readonly { path: string; message: string }[]): string[] {
  return issues
    .filter((issue) => issue.message.startsWith('group membership cycle'))
    .map((issue) => `${issue.path} ${issue.message}`);
}

describe('group cycles in a change set', () => {
  it('tells a cycle as the search through every group does', () => {
    fc.assert(
      fc.property(fc.array(groupDraw, { maxLength: 8 }), (draws) => {
        const groups = new Map<string, Group>();
        for (const draw of draws) groups.set(`g${draw.id}`, groupOf(draw, false) as unknown as Group);
        const reported: string[] = [];
        checkGroupCycles(
          [...groups.values()],
          (group) => ['groups', group.id],
          (_path, message) => reported.push(message),
        );
        expect(hasGroupCycle(groups)).toBe(reported.length > 0);
      }),
      { numRuns: 1000 },
    );
  });

  it('refuses a change set for the cycles the whole search finds, and only those', () => {
    fc.assert(
      fc.property(
        fc.array(groupDraw, { minLength: 1, maxLength: 6 }),
        fc.array(groupDraw, { minLength: 1, maxLength: 3 }),
        fc.array(fc.nat(GROUPS - 1), { maxLength: 2 }),
        (initial, upserts, deletes) => {
          const fleet = acyclicFleet(initial);
          fc.pre(fleet !== undefined);
          const index = FleetIndex.build(fleet as Fleet);
          expect(index.groupsAcyclic).toBe(true);
          const upserted = new Map(upserts.map((draw) => [`g${draw.id}`, groupOf(draw, false)]));
          const deleted = [...new Set(deletes.map((id) => `g${id}`))].filter(
            (id) => index.groups.has(id) && !upserted.has(id),
          );
          const input = { upsert: { groups: [...upserted.values()] }, delete: { groups: deleted } };
          const validation = validateChangeSet(input, index);

          // What the search through every group of the resulting configuration reports.
          const groups = new Map<string, Group>(index.groups);
          for (const id of deleted) groups.delete(id);
          const positions = new Map([...upserted.keys()].map((id, position) => [id, position]));
          for (const group of upserted.values()) groups.set(group['id'] as string, group as unknown as Group);
          const expected: string[] = [];
          checkGroupCycles(
            [...groups.values()],
            (group): PathSegment[] => {
              const position = positions.get(group.id);
              return position === undefined
                ? ['groups', group.id, 'criteria']
                : ['upsert', 'groups', position, 'criteria'];
            },
            (path, message) => expected.push(`${formatJsonPath(path)} ${message}`),
          );
          expect(validation.ok ? [] : cycleIssues(validation.issues)).toEqual(expected);
          // The index keeps knowing whether its groups are acyclic as changes go in.
          if (validation.ok) index.apply(validation.change);
          expect(index.groupsAcyclic).toBe(!hasGroupCycle(index.groups));
        },
      ),
      { numRuns: 1000 },
    );
  });
});
