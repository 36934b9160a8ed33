import fc from 'fast-check';
import { formatStreamCursor, parseStreamCursor } from './stream-cursor';

describe('stream cursors', () => {
  it('read back what they wrote', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.nat({ max: 200 }).map(String), fc.bigInt({ min: 0n, max: 2n ** 63n - 1n })),
        (positions) => {
          const cursor = new Map(
            Object.entries(positions).map(([partition, offset]) => [Number(partition), offset]),
          );
          expect(parseStreamCursor(formatStreamCursor(cursor))).toEqual(cursor);
        },
      ),
    );
  });

  it('list partitions in order', () => {
    expect(
      formatStreamCursor(
        new Map([
          [2, 0n],
          [0, 13n],
          [1, 5n],
        ]),
      ),
    ).toBe('0:13,1:5,2:0');
  });

  it('refuse what is not one, quoting it', () => {
    expect(() => parseStreamCursor('0:13,x')).toThrow('"0:13,x"');
    expect(() => parseStreamCursor('0:-1')).toThrow('not a stream cursor');
  });
});
