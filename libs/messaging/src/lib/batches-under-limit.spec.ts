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

  it('counts bytes, not characters', () => {
    expect(recordBytes({ key: 'é', value: '€' })).toBe(recordBytes({ key: 'ab', value: 'abc' }));
  });
});
