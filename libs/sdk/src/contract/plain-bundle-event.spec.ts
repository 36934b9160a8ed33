import fc from 'fast-check';
import { bundleEventSchema, parseEvent, plainBundleEvent } from './schemas';
import { TOPICS } from './topics';

const hex64 = fc.stringMatching(/^[0-9a-f]{64}$/);
const instant = fc
  .integer({ min: Date.parse('0001-01-01T00:00:00.000Z'), max: Date.parse('9999-12-31T23:59:59.999Z') })
  .map((time) => new Date(time).toISOString());

const validEvent = fc.record(
  {
    schemaVersion: fc.constant(1),
    type: fc.constant('node.bundle'),
    nodeId: fc.string({ minLength: 1 }),
    revision: fc.nat(),
    committedAt: instant,
    generatedAt: instant,
    catchUp: fc.boolean(),
    hash: hex64.map((hex) => `sha256:${hex}`),
    files: fc.array(fc.record({ path: fc.string({ minLength: 1 }), sha256: hex64 }), { maxLength: 8 }),
    manifestSha256: hex64,
  },
  {
    requiredKeys: [
      'schemaVersion',
      'type',
      'nodeId',
      'revision',
      'committedAt',
      'hash',
      'files',
      'manifestSha256',
    ],
  },
);

/** Near-valid values: one member replaced by anything, dropped, or one added. */
const nearlyValid = fc
  .tuple(
    validEvent,
    fc.constantFrom(...Object.keys(bundleEventSchema.shape), 'manifest', 'extra'),
    fc.oneof(
      fc.anything(),
      fc.string(),
      hex64,
      fc.integer(),
      fc.array(fc.record({ path: fc.string(), sha256: fc.string() })),
      fc.constant(undefined),
      fc.constant('2026-02-30T10:00:00.000Z'),
      fc.constant('2026-11-26T24:00:00.000Z'),
    ),
  )
  .map(([event, key, value]) => {
    const changed: Record<string, unknown> = { ...event };
    if (value === undefined) delete changed[key];
    else changed[key] = value;
    return changed;
  });

describe('plainBundleEvent, the node.bundle fast check', () => {
  it('accepts the events the services write, each equal to what the schema reads', () => {
    fc.assert(
      fc.property(validEvent, (event) => {
        expect(plainBundleEvent(event)).toBe(true);
        expect(bundleEventSchema.parse(event)).toEqual(event);
      }),
      { numRuns: 300 },
    );
  });

  it('is never looser than the schema: what it accepts, the schema reads as the same event', () => {
    fc.assert(
      fc.property(fc.oneof(nearlyValid, fc.anything()), (value) => {
        if (!plainBundleEvent(value)) return;
        const parsed = bundleEventSchema.safeParse(value);
        expect(parsed.success).toBe(true);
        expect(parsed.data).toEqual(value);
      }),
      { numRuns: 2_000 },
    );
  });

  it('leaves the rest to the schema, which names what is wrong', () => {
    const event = { schemaVersion: 1, type: 'node.bundle', nodeId: 'n1', revision: 1 };
    const parsed = parseEvent(TOPICS.nodeBundles, { ...event, committedAt: 'yesterday' });
    expect(parsed).toMatchObject({
      ok: false,
      issues: expect.arrayContaining([expect.objectContaining({ path: '$.committedAt' })]),
    });
  });
});
