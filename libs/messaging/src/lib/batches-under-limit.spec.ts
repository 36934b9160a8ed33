import fc from 'fast-check';
import type { OutgoingMessage } from './messaging';
import { batchesUnderLimit, recordBytes } from './messaging';

const message = fc.record({
  key: fc.option(fc.string({ maxLength: 20 }), { nil: null }),
  value: fc.string({ maxLength: 3_000 }),
  headers: fc.option(fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 30 })), {
    nil: undefined,
  }),
}) as fc.Arbitrary<OutgoingMessage>;

describe('batchesUnderLimit', () => {
  it('keeps every message that fits, in order, in batches under the limit; sets apart only the oversized', () => {
    fc.assert(
      fc.property(
        fc.array(message, { maxLength: 200 }),
        fc.integer({ min: 200, max: 20_000 }),
        (messages, limit) => {
          const { batches, oversized } = batchesUnderLimit(messages, limit);
          const kept = messages.filter((_, index) => !oversized.includes(index));
          expect(batches.flat()).toEqual(kept);
          for (const batch of batches) {
            expect(batch.length).toBeGreaterThan(0);
            expect(batch.reduce((sum, one) => sum + recordBytes(one), 0)).toBeLessThanOrEqual(limit);
          }
          for (const index of oversized)
            expect(recordBytes(messages[index] as OutgoingMessage)).toBeGreaterThan(limit - 128);
        },
      ),
    );
  });

  it('splits as measuring every message would, whether a send is told to fit from its lengths or not', () => {
    const anyText = (maxLength: number) => fc.string({ unit: 'binary', maxLength });
    const anyMessage = fc.record({
      key: fc.option(anyText(20), { nil: null }),
      value: anyText(100),
      headers: fc.option(fc.dictionary(anyText(8), anyText(30), { maxKeys: 3 }), { nil: undefined }),
    }) as fc.Arbitrary<OutgoingMessage>;
    fc.assert(
      fc.property(
        fc.array(anyMessage, { maxLength: 30 }),
        fc.integer({ min: 100, max: 20_000 }),
        (messages, limit) => {
          expect(batchesUnderLimit(messages, limit)).toEqual(measuredBatches(messages, limit));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('counts bytes, not characters', () => {
    expect(recordBytes({ key: 'é', value: '€' })).toBe(recordBytes({ key: 'ab', value: 'abc' }));
  });
});

/** The split by each message's measured size: the first that does not fit starts a new batch. */
function measuredBatches(
  messages: readonly OutgoingMessage[],
  limit: number,
): { batches: OutgoingMessage[][]; oversized: number[] } {
  const budget = limit - 128;
  const batches: OutgoingMessage[][] = [];
  const oversized: number[] = [];
  let current: OutgoingMessage[] = [];
  let size = 0;
  messages.forEach((message, index) => {
    const bytes = recordBytes(message);
    if (bytes > budget) oversized.push(index);
    else {
      if (size + bytes > budget && current.length > 0) {
        batches.push(current);
        current = [];
        size = 0;
      }
      current.push(message);
      size += bytes;
    }
  });
  if (current.length > 0) batches.push(current);
  return { batches, oversized };
}
