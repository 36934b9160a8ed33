import fc from 'fast-check';
import type { ArbitraryFleetFile } from '../../testing/fleet-arbitrary';
import { arbitraryFleet } from '../../testing/fleet-arbitrary';
import type { Fleet } from '../model/fleet';
import { compareCodeUnits } from '../text/compare';
import { validateFleet } from '../validation/validate';
import { relationshipKey } from './change-set';
import { FleetIndex } from './fleet-index';
import { replacementChangeSet, sortedFleet } from './replacement';
import { validateChangeSet } from './validate-change-set';

function valid(file: ArbitraryFleetFile): Fleet {
  const result = validateFleet(file);
  if (!result.ok) throw new Error(`the arbitrary fleet is invalid: ${JSON.stringify(result.issues)}`);
  return result.fleet;
}

/** Two configurations, the second replacing the first; the arbitraries share ids, so some entities stay, some go. */
const replacements = fc.tuple(
  arbitraryFleet({ relationships: 'any' }).map(valid),
  arbitraryFleet({ relationships: 'acyclic' }).map(valid),
);

describe('replacementChangeSet', () => {
  it('is what validateChangeSet makes of the same change set sent as JSON', () => {
    fc.assert(
      fc.property(replacements, ([before, after]) => {
        const index = FleetIndex.build(before);
        const parsed = replacementChangeSet(index, after);
        expect(validateChangeSet(JSON.parse(JSON.stringify(parsed)), index)).toEqual({
          ok: true,
          change: parsed,
        });
      }),
      { numRuns: 300 },
    );
  });

  it('turns the configuration into the fleet', () => {
    fc.assert(
      fc.property(replacements, ([before, after]) => {
        const index = FleetIndex.build(before);
        index.apply(replacementChangeSet(index, after));
        expect(index.toFleet()).toEqual(sortedFleet(after));
      }),
      { numRuns: 200 },
    );
  });
});

describe('sortedFleet', () => {
  it("orders every collection as the index's toFleet does, parameters by name, each relationship once", () => {
    fc.assert(
      fc.property(arbitraryFleet({ relationships: 'any' }).map(valid), (fleet) => {
        const sorted = sortedFleet(fleet);
        const indexed = FleetIndex.build(fleet).toFleet();
        const keys = indexed.relationships.map(relationshipKey);
        expect(sorted).toEqual({
          ...indexed,
          relationships: indexed.relationships.filter(
            (relationship, at) => keys.indexOf(relationshipKey(relationship)) === at,
          ),
        });
        expect(Object.keys(sorted.parameters)).toEqual(Object.keys(fleet.parameters).sort(compareCodeUnits));
      }),
      { numRuns: 200 },
    );
  });
});
