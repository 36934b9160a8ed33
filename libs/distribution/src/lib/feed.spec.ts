import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import type { FeedEntry } from './feed';
import { confirmationSchema, confirmationsOf, entryFor, feedEntrySchema, plainFeedEntry } from './feed';
import { blobBatchOf, blobBatchSchema } from './http/feed.controller';

const hex = fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 64, maxLength: 64 });
/** Digests and near misses: a capital, a letter past f, one digit short or over. */
const digestLike = mostly(
  hex,
  hex.map((digest) => `${digest.slice(0, 63)}A`),
  hex.map((digest) => `${digest.slice(0, 63)}g`),
  hex.map((digest) => digest.slice(1)),
  hex.map((digest) => `${digest}0`),
);
const odd = fc.oneof(
  fc.constant(undefined),
  fc.constant(null),
  fc.integer({ min: -2, max: 3 }),
  fc.double(),
  fc.string({ maxLength: 3 }),
  fc.boolean(),
  fc.constant([]),
  fc.constant({}),
);

/** Mostly the first (right) value, now and then one of the others: a wrong part is then often the only one. */
function mostly<T>(right: fc.Arbitrary<T>, ...wrong: fc.Arbitrary<unknown>[]): fc.Arbitrary<unknown> {
  return fc.oneof(
    { arbitrary: right as fc.Arbitrary<unknown>, weight: 6 * wrong.length },
    ...wrong.map((arbitrary) => ({ arbitrary, weight: 1 })),
  );
}

/** A value shaped like an entry as JSON gives it, each part either right or replaced by an odd value, keys added or left out. */
const entryLike = fc
  .record({
    seq: mostly(fc.integer({ min: 1, max: 1_000 }), odd),
    nodeId: mostly(fc.constant('node-1'), odd),
    path: mostly(fc.array(fc.constantFrom('root', 'eu')), fc.array(odd, { maxLength: 2 }), odd),
    previousPath: mostly(fc.array(fc.constantFrom('root', 'eu')), odd),
    revision: mostly(fc.nat(), odd),
    bundle: mostly(
      fc.constant(null),
      odd,
      fc.record(
        {
          hash: mostly(
            digestLike.map((digest) => `sha256:${String(digest)}`),
            digestLike,
            odd,
          ),
          revision: mostly(fc.nat(), odd),
          committedAt: mostly(fc.constant('2026-11-24T10:00:00.000Z'), odd),
          generatedAt: mostly(fc.constant('2026-11-24T10:00:00.000Z'), odd),
          distributedAt: mostly(fc.constant('2026-11-24T10:00:00.000Z'), odd),
          files: mostly(
            fc.array(
              mostly(
                fc.record({ path: mostly(fc.constantFrom('a.cf', 'b/c.cf'), odd), sha256: digestLike }),
                fc.record({ path: fc.constant('a.cf'), sha256: hex, extra: odd }),
                odd,
              ),
              { maxLength: 4 },
            ),
            odd,
          ),
          nodeKey: mostly(fc.constant(null), digestLike, odd),
          tokenDigest: mostly(fc.constant(null), hex, odd),
          catchUp: mostly(fc.boolean(), odd),
          extra: odd,
        },
        { requiredKeys: ['hash', 'revision', 'files'] },
      ),
    ),
    extra: odd,
  })
  .chain((value) =>
    // Most cases without the extra key: the plain shape is then often whole, and must be taken.
    fc.boolean().map((keepExtra) => {
      if (keepExtra) return value as unknown;
      const { extra: _extra, ...rest } = value;
      return rest as unknown;
    }),
  )
  // As a page gives it: parsed JSON (no undefined, plain objects).
  .map((value): unknown => JSON.parse(JSON.stringify(value)));

describe('plainFeedEntry (the fast reading of an entry, the schema behind it)', () => {
  it('takes a value only as the schema reads it, and takes every value the schema reads to itself', () => {
    let taken = 0;
    fc.assert(
      fc.property(entryLike, (value) => {
        const fast = plainFeedEntry(value);
        const parsed = feedEntrySchema.safeParse(value);
        if (fast !== undefined) taken++;
        expect({
          // Taken: the schema reads it, to the very same value.
          takenAsRead: fast === undefined || (parsed.success && isDeepStrictEqual(fast, parsed.data)),
          // Left to the schema while it reads it: only a value its parse changes (keys dropped).
          leftOnlyWhenChanged:
            fast !== undefined || !parsed.success || !isDeepStrictEqual(parsed.data, value),
        }).toEqual({ takenAsRead: true, leftOnlyWhenChanged: true });
      }),
      { numRuns: 20_000 },
    );
    expect(taken).toBeGreaterThan(50);
  });
});

describe('blobBatchOf (a POST /blobs body read by hand, the schema behind it)', () => {
  it('gives what the schema gives, and refuses what it refuses', () => {
    const digests = fc.array(mostly(hex, digestLike, odd), { maxLength: 5 });
    const body = mostly(
      fc.record({ digests }),
      fc.record({ digests, extra: odd }),
      fc.record({ digests: odd }),
      odd,
    ).map((value): unknown => JSON.parse(JSON.stringify(value ?? null)));
    fc.assert(
      fc.property(body, (value) => {
        const parsed = blobBatchSchema.safeParse(value);
        let outcome: { digests: string[] } | { error: string };
        try {
          outcome = { digests: blobBatchOf(value) };
        } catch (error) {
          outcome = { error: (error as Error).message };
        }
        expect(outcome).toEqual(
          parsed.success ? { digests: parsed.data.digests } : { error: 'invalid blob request' },
        );
      }),
      { numRuns: 5_000 },
    );
  });
});

describe('confirmationsOf (what a relay confirms once entries are on its disk)', () => {
  const relays = ['root', 'relay-eu', 'relay-us', 'deep'];
  const pathOf = fc
    .subarray(relays)
    .map((path) => (path.length > 0 ? ['root', ...path.filter((id) => id !== 'root')] : []));
  const entry: fc.Arbitrary<FeedEntry> = fc.record({
    seq: fc.integer({ min: 1, max: 1_000 }),
    nodeId: fc.constantFrom('a', 'b', 'c'),
    path: pathOf,
    previousPath: pathOf,
    revision: fc.nat({ max: 9 }),
    bundle: fc.option(
      fc.record(
        {
          hash: hex.map((digest) => `sha256:${digest}`),
          revision: fc.nat({ max: 9 }),
          committedAt: fc.constant('2026-11-28T10:00:00.000Z'),
          generatedAt: fc.constant('2026-11-28T10:00:00.100Z'),
          distributedAt: fc.constant('2026-11-28T10:00:00.200Z'),
          files: fc.constant([]),
          catchUp: fc.boolean(),
        },
        { requiredKeys: ['hash', 'revision', 'committedAt', 'generatedAt', 'distributedAt', 'files'] },
      ),
      { nil: null },
    ),
  });

  it('confirms each bundle the relay keeps, in order, as the schema reads a confirmation; nothing else', () => {
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 12 }), fc.constantFrom(...relays), (entries, relayId) => {
        const at = '2026-11-28T10:00:01.000Z';
        const confirmations = confirmationsOf(entries, relayId, at);
        const kept = entries.filter((candidate) => entryFor(candidate, relayId) === 'keep');
        expect(confirmations.map((confirmation) => confirmation.nodeId)).toEqual(
          kept.map(({ nodeId }) => nodeId),
        );
        confirmations.forEach((confirmation, index) => {
          const bundle = kept[index]?.bundle;
          expect(confirmationSchema.parse(confirmation)).toEqual(confirmation);
          expect(confirmation).toEqual({
            relayId,
            nodeId: kept[index]?.nodeId,
            hash: bundle?.hash,
            revision: bundle?.revision,
            committedAt: bundle?.committedAt,
            generatedAt: bundle?.generatedAt,
            distributedAt: bundle?.distributedAt,
            confirmedAt: at,
            ...(bundle?.catchUp ? { catchUp: true } : {}),
          });
        });
      }),
    );
  });
});
