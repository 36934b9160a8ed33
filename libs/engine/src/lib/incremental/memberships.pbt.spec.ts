import fc from 'fast-check';
import { arbitraryMutations, interpretChangeSet } from '../../testing/change-set-arbitrary';
import { arbitraryFleet } from '../../testing/fleet-arbitrary';
import type { Fleet } from '../model/fleet';
import { validateFleet } from '../validation/validate';
import { GenerationEngine } from './engine';

/**
 * The generation pool's full generation: workers index shares of the nodes and hand each node's
 * memberships to the caller's engine, which takes them instead of evaluating groups and rules. That
 * engine must be the engine `fromFleet` builds, then and after any change sets.
 */

function share(fleet: Fleet, shares: number, index: number): Fleet {
  return { ...fleet, nodes: fleet.nodes.filter((_, position) => position % shares === index) };
}

const resultKey = (result: { status: string; hash: string | null; errors: readonly unknown[] }): string =>
  JSON.stringify([result.status, result.hash, result.errors]);

function indexOf(engine: GenerationEngine): unknown {
  const compiled = engine.compiled;
  const sortedSets = (map: ReadonlyMap<string, ReadonlySet<string>>): [string, string[]][] =>
    [...map]
      .map(([key, set]): [string, string[]] => [key, [...set].sort()])
      .sort(([a], [b]) => (a < b ? -1 : 1));
  const sortedMap = <T>(map: ReadonlyMap<string, T>): [string, T][] =>
    [...map].sort(([a], [b]) => (a < b ? -1 : 1));
  return {
    members: sortedSets(compiled.members),
    ruleTargets: sortedSets(compiled.ruleTargets),
    groupsOfNode: sortedMap(compiled.groupsOfNode),
    rulesOfNode: sortedMap(compiled.rulesOfNode),
    inactiveRules: sortedMap(compiled.inactiveRules),
  };
}

describe('GenerationEngine.fromFleetAndMemberships', () => {
  it('builds, from the memberships of share indexes, the engine fromFleet builds, through change sets', () => {
    fc.assert(
      fc.property(
        arbitraryFleet(),
        fc.integer({ min: 1, max: 3 }),
        fc.array(arbitraryMutations(), { minLength: 0, maxLength: 4 }),
        (file, shares, steps) => {
          const initial = validateFleet(file);
          if (!initial.ok) throw new Error('the fleet arbitrary gave an invalid fleet');
          const fleet = initial.fleet;
          const memberships = {
            groupsOfNode: new Map<string, readonly string[]>(),
            rulesOfNode: new Map<string, readonly string[]>(),
          };
          for (let index = 0; index < shares; index++) {
            const part = GenerationEngine.fromFleet(share(fleet, shares, index));
            for (const node of part.compiled.nodeIds) {
              const known = part.membershipsOf(node);
              if (!known) throw new Error(`no memberships for ${node}`);
              memberships.groupsOfNode.set(node, known.groups);
              memberships.rulesOfNode.set(node, known.rules);
            }
          }
          const direct = GenerationEngine.fromFleet(fleet);
          const handed = GenerationEngine.fromFleetAndMemberships(fleet, memberships);
          expect(indexOf(handed)).toEqual(indexOf(direct));

          for (const mutations of [[], ...steps]) {
            const { changeSet } = interpretChangeSet(direct.toFleet(), mutations);
            const outcome = direct.apply(JSON.parse(JSON.stringify(changeSet)));
            const mirrored = handed.apply(JSON.parse(JSON.stringify(changeSet)));
            const affected = (applied: typeof outcome): readonly string[] | false =>
              applied.ok && applied.affected;
            expect(affected(mirrored)).toEqual(affected(outcome));
            direct.regenerate();
            handed.regenerate();
            expect(indexOf(handed)).toEqual(indexOf(direct));
            for (const [nodeId, result] of direct.allResults())
              expect(resultKey(handed.result(nodeId) ?? { status: 'none', hash: null, errors: [] })).toBe(
                resultKey(result),
              );
          }
        },
      ),
      { numRuns: 40 },
    );
  });

  it('refuses memberships that miss a node or name an unknown group', () => {
    const result = validateFleet({
      nodes: [
        { id: 'n1', hostname: 'n1.example' },
        { id: 'n2', hostname: 'n2.example' },
      ],
    });
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    const rulesOfNode = new Map([
      ['n1', []],
      ['n2', []],
    ]);
    expect(() =>
      GenerationEngine.fromFleetAndMemberships(result.fleet, {
        groupsOfNode: new Map([['n1', []]]),
        rulesOfNode,
      }),
    ).toThrow(/miss node n2/);
    expect(() =>
      GenerationEngine.fromFleetAndMemberships(result.fleet, {
        groupsOfNode: new Map([
          ['n1', ['nope']],
          ['n2', []],
        ]),
        rulesOfNode,
      }),
    ).toThrow(/unknown group nope/);
  });
});
