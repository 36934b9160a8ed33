import fc from 'fast-check';
import { compareCaseInsensitive, compareCodeUnits, foldCase } from './compare';

describe('case folding', () => {
  it('orders folded strings exactly as Java CASE_INSENSITIVE_ORDER orders the originals', () => {
    const text = fc.oneof(
      fc.string(),
      fc.string({
        unit: fc.constantFrom(
          'a',
          'A',
          'ß',
          'ẞ',
          'İ',
          'ı',
          'i',
          'I',
          'ſ',
          's',
          'S',
          'é',
          'É',
          '_',
          '0',
          'Σ',
          'ς',
          'σ',
        ),
      }),
      fc.string({ unit: 'grapheme' }),
    );
    fc.assert(
      fc.property(text, text, (a, b) => {
        expect(compareCodeUnits(foldCase(a), foldCase(b))).toBe(compareCaseInsensitive(a, b));
      }),
      { numRuns: 2000 },
    );
  });
});
