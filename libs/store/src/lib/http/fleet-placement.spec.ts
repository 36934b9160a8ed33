import fc from 'fast-check';
import { parseFleetPlacement, placementOf } from './fleet-placement';

const id = fc.stringMatching(/^[a-z][a-z0-9-]{0,11}$/);
const fleetOfPlacements = fc.record({
  nodes: fc.array(fc.record({ id, policyServer: id, hostname: id, properties: fc.constant({}) })),
  relays: fc.array(fc.record({ id, policyServer: id })),
});

describe('fleet placement', () => {
  it("keeps each node's and relay's id and policy server, in order, and reads back as exported", () => {
    fc.assert(
      fc.property(fleetOfPlacements, (fleet) => {
        const placement = placementOf(fleet as never);
        expect(placement.nodes).toEqual(fleet.nodes.map(({ id, policyServer }) => ({ id, policyServer })));
        expect(placement.relays).toEqual(fleet.relays);
        expect(parseFleetPlacement(JSON.parse(JSON.stringify(placement)))).toEqual({ ok: true, placement });
      }),
    );
  });

  it('names the JSON path of what is not a placement', () => {
    expect(parseFleetPlacement({ nodes: [{ id: 'n1' }], relays: [] })).toMatchObject({
      ok: false,
      issues: [expect.stringMatching(/^\$\.nodes\[0\]\.policyServer: /)],
    });
    expect(parseFleetPlacement({ nodes: [], relays: [{ id: '', policyServer: 'root' }] })).toMatchObject({
      ok: false,
      issues: [expect.stringMatching(/^\$\.relays\[0\]\.id: /)],
    });
    expect(parseFleetPlacement({ nodes: [], relays: [], rules: [] })).toMatchObject({ ok: false });
    expect(parseFleetPlacement(null)).toMatchObject({ ok: false, issues: [expect.stringMatching(/^\$: /)] });
  });
});
