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

/** The split by each message's measured size: each batch as long as the next message fits. */
function measuredBatches(
  messages: readonly OutgoingMessage[],
  limit: number,
): { batches: OutgoingMessage[][]; oversized: number[] } {
  const budget = limit - 128;
  const oversized = messages.flatMap((message, index) => (recordBytes(message) > budget ? [index] : []));
  const runs = messages
    .filter((_, index) => !oversized.includes(index))
    .reduce<{ messages: OutgoingMessage[]; bytes: number }[]>((done, message) => {
      const last = done[done.length - 1];
      const bytes = recordBytes(message);
      if (last !== undefined && last.bytes + bytes <= budget) {
        last.messages.push(message);
        last.bytes += bytes;
      } else done.push({ messages: [message], bytes });
      return done;
    }, []);
  return { batches: runs.map((run) => run.messages), oversized };
}
