import fc from 'fast-check';
import { z } from 'zod';
import { ROOT_RELAY, readPlacementChanges } from './topology';

// The schema the reader replaced: what it accepts and what it gives are the oracle.
const placement = z.looseObject({
  id: z.string().min(1),
  policyServer: z.string().min(1).default(ROOT_RELAY),
});
const oracle = z.looseObject({
  upsert: z
    .looseObject({ nodes: z.array(placement).optional(), relays: z.array(placement).optional() })
    .optional(),
  delete: z
    .looseObject({ nodes: z.array(z.string()).optional(), relays: z.array(z.string()).optional() })
    .optional(),
});

/** A JSON value that is sometimes what the section wants and sometimes almost. */
const oddValue = fc.oneof(
  fc.constant(null),
  fc.constantFrom('', 'eu', 'root'),
  fc.integer(),
  fc.boolean(),
  fc.constant([]),
  fc.constant({}),
);
const placementLike = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record(
      { id: fc.constantFrom('n1', 'n2', 'eu'), policyServer: fc.constantFrom('root', 'eu') },
      { requiredKeys: ['id'] },
    ),
  },
  {
    weight: 1,
    arbitrary: fc.record(
      { id: oddValue, policyServer: oddValue, properties: fc.jsonValue() },
      { requiredKeys: [] },
    ),
  },
  { weight: 1, arbitrary: oddValue },
);
const ids = fc.oneof(
  { weight: 4, arbitrary: fc.array(fc.constantFrom('n1', 'eu', '')) },
  { weight: 1, arbitrary: fc.array(oddValue) },
  { weight: 1, arbitrary: oddValue },
);
const section = <T>(fields: { nodes: fc.Arbitrary<T>; relays: fc.Arbitrary<T> }) =>
  fc.oneof(
    { weight: 5, arbitrary: fc.record(fields, { requiredKeys: [] }) },
    { weight: 1, arbitrary: oddValue },
  );
const changeSetLike = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record(
      {
        upsert: section({
          nodes: fc.oneof(fc.array(placementLike), oddValue),
          relays: fc.oneof(fc.array(placementLike), oddValue),
        }),
        delete: section({ nodes: ids, relays: ids }),
        directives: fc.jsonValue(),
      },
      { requiredKeys: [] },
    ),
  },
  { weight: 1, arbitrary: fc.jsonValue() },
);

describe('readPlacementChanges', () => {
  it('accepts what the schema accepts, gives what it gives, and names a path the schema names', () => {
    fc.assert(
      fc.property(changeSetLike, (changeSet) => {
        const read = readPlacementChanges(changeSet);
        const parsed = oracle.safeParse(changeSet);
        const namedByOracle = parsed.success
          ? []
          : parsed.error.issues.map((issue) => ['$.changeSet', ...issue.path].join('.'));
        const ours = read.ok
          ? { ok: true, value: read.value }
          : {
              ok: false,
              namesAnOraclePath: namedByOracle.includes(read.issue.slice(0, read.issue.indexOf(':'))),
            };
        const theirs = parsed.success
          ? {
              ok: true,
              value: {
                nodes: (parsed.data.upsert?.nodes ?? []).map(({ id, policyServer }) => ({
                  id,
                  policyServer,
                })),
                relays: (parsed.data.upsert?.relays ?? []).map(({ id, policyServer }) => ({
                  id,
                  policyServer,
                })),
                deletedNodes: parsed.data.delete?.nodes ?? [],
                deletedRelays: parsed.data.delete?.relays ?? [],
              },
            }
          : { ok: false, namesAnOraclePath: true };
        expect(ours).toEqual(theirs);
      }),
      { numRuns: 2000 },
    );
  });

  it('gives the root as the policy server of a placement that names none', () => {
    expect(readPlacementChanges({ upsert: { nodes: [{ id: 'n1' }] } })).toEqual({
      ok: true,
      value: { nodes: [{ id: 'n1', policyServer: 'root' }], relays: [], deletedNodes: [], deletedRelays: [] },
    });
  });
});
