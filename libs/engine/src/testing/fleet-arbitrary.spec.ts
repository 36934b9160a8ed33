import fc from 'fast-check';
import { validateFleet } from '../lib/validation/validate';
import type { ArbitraryFleetFile, RelationshipMode } from './fleet-arbitrary';
import { arbitraryFleet, seededRandom, shuffleSetLikeArrays } from './fleet-arbitrary';

function firstInvalid(fleets: readonly ArbitraryFleetFile[]): string | undefined {
  for (const fleet of fleets) {
    const result = validateFleet(fleet);
    if (!result.ok) {
      return [
        'an arbitrary fleet does not validate:',
        JSON.stringify(fleet, null, 2),
        ...result.issues.map((issue) => `${issue.path}: ${issue.message}`),
      ].join('\n');
    }
  }
  return undefined;
}

describe('arbitraryFleet', () => {
  it.each<RelationshipMode>(['none', 'acyclic', 'any'])(
    'samples 200 valid fleets with relationships %s',
    (relationships) => {
      const fleets = fc.sample(arbitraryFleet({ relationships }), { numRuns: 200, seed: 7 });
      expect(fleets).toHaveLength(200);
      expect(firstInvalid(fleets)).toBeUndefined();
    },
  );

  it('covers what it promises', () => {
    const fleets = fc.sample(arbitraryFleet({ relationships: 'any' }), { numRuns: 200, seed: 11 });
    const directives = fleets.flatMap((fleet) => fleet.directives);
    const techniques = fleets.flatMap((fleet) => fleet.techniques);
    expect(techniques.some((technique) => technique.version === '2.0')).toBe(true);
    expect(new Set(techniques.map((technique) => technique.policyGeneration))).toEqual(
      new Set([undefined, 'merged', 'separated', 'separated-with-parameters', 'separated-with-param']),
    );
    const names = new Set(directives.map((directive) => directive.name));
    for (const name of ['a', 'A', '50', '100', 'B']) expect(names.has(name)).toBe(true);
    expect(directives.some((directive) => directive.enabled === false)).toBe(true);
    expect(directives.some((directive) => (directive.require ?? []).length > 0)).toBe(true);
    expect(fleets.some((fleet) => fleet.relationships.length > 0)).toBe(true);
    expect(fleets.some((fleet) => fleet.relays.length > 0)).toBe(true);
    expect(
      fleets.some((fleet) => fleet.groups.some((group) => JSON.stringify(group).includes('"group"'))),
    ).toBe(true);
    expect(
      fleets.some((fleet) => fleet.nodes.some((node) => node.state === 'ignored')) &&
        fleets.some((fleet) => fleet.nodes.some((node) => node.state === 'empty-policies')),
    ).toBe(true);
  });

  it('keeps relationships out in mode none', () => {
    const fleets = fc.sample(arbitraryFleet(), { numRuns: 100, seed: 3 });
    for (const fleet of fleets) {
      expect(fleet.relationships).toEqual([]);
      for (const directive of fleet.directives)
        for (const kind of ['before', 'require', 'notify', 'subscribe'] as const)
          expect(directive[kind]).toBeUndefined();
    }
  });

  it('in mode acyclic, only declares edges that agree with the directive index order', () => {
    const index = (id: string): number => Number(id.slice(1));
    for (const fleet of fc.sample(arbitraryFleet({ relationships: 'acyclic' }), { numRuns: 200, seed: 5 })) {
      for (const directive of fleet.directives) {
        const self = index(directive.id);
        for (const id of [...(directive.before ?? []), ...(directive.notify ?? [])])
          expect(index(id)).toBeGreaterThan(self);
        for (const id of [...(directive.require ?? []), ...(directive.subscribe ?? [])])
          expect(index(id)).toBeLessThan(self);
      }
      for (const relationship of fleet.relationships)
        expect(index(relationship.from)).toBeLessThan(index(relationship.to));
    }
  });
});

describe('shuffleSetLikeArrays', () => {
  /** The fleet as text with every array sorted and every object's keys sorted, recursively. */
  const canonicalSets = (value: unknown): string => {
    if (Array.isArray(value)) return `[${value.map(canonicalSets).sort().join(',')}]`;
    if (typeof value === 'object' && value !== null)
      return `{${Object.entries(value)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([key, inner]) => `${JSON.stringify(key)}:${canonicalSets(inner)}`)
        .join(',')}}`;
    return JSON.stringify(value);
  };

  it('returns a valid deep copy, equal up to order, without touching its input', () => {
    fc.assert(
      fc.property(arbitraryFleet({ relationships: 'any' }), fc.integer(), (fleet, seed) => {
        const before = JSON.stringify(fleet);
        const copy = shuffleSetLikeArrays(fleet, seededRandom(seed));
        expect(JSON.stringify(fleet)).toBe(before);
        expect(validateFleet(copy).ok).toBe(true);
        expect(canonicalSets(copy)).toBe(canonicalSets(fleet));
        // Promise lists keep their order.
        const promises = (file: ArbitraryFleetFile): Record<string, string> =>
          Object.fromEntries(
            file.techniques.map((technique) => [
              `${technique.id}@${technique.version}`,
              JSON.stringify([technique.promises, technique.refresh]),
            ]),
          );
        expect(promises(copy)).toEqual(promises(fleet));
      }),
      { numRuns: 100 },
    );
  });

  it('does shuffle', () => {
    const fleet = {
      techniques: [{ id: 'a' }, { id: 'b' }, { id: 'c' }, { id: 'd' }, { id: 'e' }, { id: 'f' }],
    };
    const orders = new Set(
      Array.from({ length: 20 }, (_, seed) =>
        JSON.stringify(shuffleSetLikeArrays(fleet, seededRandom(seed)).techniques),
      ),
    );
    expect(orders.size).toBeGreaterThan(5);
  });
});
