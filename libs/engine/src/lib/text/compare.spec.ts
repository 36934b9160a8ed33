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
        expect(Math.sign(compareCodeUnits(foldCase(a), foldCase(b)))).toBe(
          Math.sign(compareCaseInsensitive(a, b)),
        );
      }),
      { numRuns: 2000 },
    );
  });
});

describe('compareCodeUnits', () => {
  it("orders as a code-unit-by-code-unit comparison (Java's String.compareTo), surrogates included", () => {
    const byUnits = (a: string, b: string): number => {
      for (let index = 0; index < Math.min(a.length, b.length); index++) {
        const difference = a.charCodeAt(index) - b.charCodeAt(index);
        if (difference !== 0) return Math.sign(difference);
      }
      return Math.sign(a.length - b.length);
    };
    const text = fc.string({ unit: fc.constantFrom('a', 'b', 'B', 'é', '\u{1F600}', '\uFF21', '') });
    fc.assert(
      fc.property(text, text, (a, b) => {
        expect(compareCodeUnits(a, b)).toBe(byUnits(a, b));
      }),
      { numRuns: 2000 },
    );
  });
});
