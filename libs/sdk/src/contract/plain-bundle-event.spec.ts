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

  /** An event whose files may have bad digests, and held files that share some of its paths. */
  const eventAndHeld = fc
    .tuple(
      validEvent,
      fc.array(
        fc.record({
          path: fc.string({ minLength: 1, maxLength: 4 }),
          sha256: fc.oneof(hex64, fc.string({ maxLength: 66 }), fc.constant('A'.repeat(64))),
        }),
        { maxLength: 8 },
      ),
      fc.array(fc.tuple(fc.nat(), fc.boolean(), hex64), { maxLength: 8 }),
      fc.array(fc.record({ path: fc.string({ minLength: 1, maxLength: 4 }), sha256: hex64 }), {
        maxLength: 3,
      }),
    )
    .map(([event, files, picks, others]) => {
      const sorted = [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
      // Held: some of the event's paths, with its digest when that one is valid or another valid one.
      const held = picks.flatMap(([index, sameDigest, digest]) => {
        const file = sorted[index % Math.max(1, sorted.length)];
        if (!file) return [];
        const valid = /^[0-9a-f]{64}$/.test(file.sha256);
        return [{ path: file.path, sha256: sameDigest && valid ? file.sha256 : digest }];
      });
      const heldFiles = [...held, ...others].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
      return { event: { ...event, files: sorted }, heldFiles };
    });

  it('answers the same with the files a reader holds for the node (each digest checked when it came)', () => {
    fc.assert(
      fc.property(eventAndHeld, ({ event, heldFiles }) => {
        expect(plainBundleEvent(event, { heldFiles: () => heldFiles })).toBe(plainBundleEvent(event));
      }),
      { numRuns: 2_000 },
    );
  });

  it('asks for the held files once an event, by its node', () => {
    const heldFiles = jest.fn(() => [{ path: 'a', sha256: 'f'.repeat(64) }]);
    const event = {
      schemaVersion: 1,
      type: 'node.bundle',
      nodeId: 'n1',
      revision: 1,
      committedAt: '2026-11-30T10:00:00.000Z',
      hash: `sha256:${'0'.repeat(64)}`,
      files: [
        { path: 'a', sha256: 'f'.repeat(64) },
        { path: 'b', sha256: 'e'.repeat(64) },
      ],
      manifestSha256: '1'.repeat(64),
    };
    expect(parseEvent(TOPICS.nodeBundles, JSON.stringify(event), { heldFiles })).toEqual({ ok: true, event });
    expect(heldFiles.mock.calls).toEqual([['n1']]);
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
