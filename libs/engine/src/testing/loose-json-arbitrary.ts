import fc from 'fast-check';

/** Text that any check of an entity may trip on: ids, spaces, controls, surrogates, long runs. */
export const tricky = fc.oneof(
  fc.constantFrom(
    '',
    'a',
    'node-1',
    'relay.eu_1',
    'root',
    '-x',
    'a b',
    'a\tb',
    'a\u0000',
    '\u007f',
    'é',
    '\uD800',
  ),
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 6 }),
  fc.constantFrom('x'.repeat(128), 'x'.repeat(129), 'h'.repeat(253), 'h'.repeat(254)),
);

/** JSON-like values with what JSON cannot hold mixed in: non-finite numbers, holes, odd prototypes, `__proto__`. */
export const { value: looseJson } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom(null, true, false, 0, -0, 1.5, Number.NaN, Infinity, undefined),
    tricky,
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(fc.oneof(tricky, fc.constantFrom('__proto__', 'constructor', '0', '10')), tie('value'), {
      maxKeys: 3,
      noNullPrototype: true,
    }),
    fc.constantFrom(
      new Date(0),
      Object.create(null) as object,
      // eslint-disable-next-line no-sparse-arrays
      [1, , 2],
      JSON.parse('{"__proto__": {"a": 1}}') as object,
    ),
  ),
}));
