import fc from 'fast-check';
import { arbitraryFleet } from '../../testing/fleet-arbitrary';
import { validateFleet } from '../validation/validate';
import { fleetShare } from './node-share';

/** A share of the nodes picked by a salt: which ids it holds looks random but is fixed by the salt. */
function shareOf(salt: number): (nodeId: string) => boolean {
  return (nodeId) => {
    let hash = salt;
    for (const char of nodeId) hash = Math.imul(hash ^ char.charCodeAt(0), 16777619) >>> 0;
    return hash % 2 === 0;
  };
}

describe('node shares', () => {
  it('a fleet file cut to a share before validation validates to the share of the whole fleet', () => {
    let leftOut = 0;
    fc.assert(
      fc.property(arbitraryFleet(), fc.nat(), (file, salt) => {
        const holds = shareOf(salt);
        const whole = validateFleet(JSON.parse(JSON.stringify(file)));
        if (!whole.ok) throw new Error('the fleet arbitrary gave an invalid fleet');
        const input = JSON.parse(JSON.stringify(file));
        const share = validateFleet(fleetShare(input, holds));
        expect(share.ok && share.fleet).toEqual(fleetShare(whole.fleet, holds));
        // The input itself is left as it came.
        expect(input).toEqual(JSON.parse(JSON.stringify(file)));
        leftOut += whole.fleet.nodes.length - (share.ok ? share.fleet.nodes.length : 0);
      }),
      { numRuns: 200 },
    );
    expect(leftOut).toBeGreaterThan(100);
  });

  it('leaves what is not a mention by id for validation to name', () => {
    const holdsNone = () => false;
    const file = {
      groups: [{ id: 'g', name: 'G', nodes: ['n1', 42] }],
      nodes: [{ id: 'n1', hostname: 'n1.example' }, { hostname: 'no-id.example' }, 'not a node'],
    };
    const share = validateFleet(fleetShare(file, holdsNone));
    expect(share.ok).toBe(false);
    expect(share.ok ? [] : share.issues.map((issue) => issue.path).sort()).toEqual([
      '$.groups[0].nodes[0]',
      '$.nodes[0].id',
      '$.nodes[1]',
    ]);
  });
});
