import fc from 'fast-check';

/**
 * Texts that CFEngine could take for something else: variable references whole, opened and empty,
 * list references, backslashes and quotes, control characters, NUL, characters beyond ASCII;
 * mixed with arbitrary strings.
 */
export function awkwardText(maxLength: number): fc.Arbitrary<string> {
  const piece = fc.constantFrom(
    '$',
    '(',
    ')',
    '{',
    '}',
    '[',
    ']',
    '\\',
    '"',
    "'",
    '\n',
    '\t',
    '\r',
    '\b',
    '\f',
    '\u001b',
    '\u0001',
    '\u007f',
    '\u0000',
    'é',
    '😀',
    ' ',
    'a',
    'n',
    'u',
    '0',
    '$(sys.fqhost)',
    '${sys.host}',
    '$(',
    '${',
    '$()',
    '@(x)',
  );
  return fc.oneof(
    fc.string({ unit: 'binary', maxLength }),
    fc.array(piece, { maxLength: 8 }).map((pieces) => pieces.join('')),
  );
}
