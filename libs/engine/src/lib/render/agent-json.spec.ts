import fc from 'fast-check';
import type { Json } from '../model/json';
import { agentJson } from './agent-json';

const isControl = (character: string): boolean => character.charCodeAt(0) < 0x20;

/** What readjson of CFEngine 3.21 does to a JSON string's content: decodes it, then again. */
function readjsonString(written: string): string {
  // It takes control characters as they are; JSON.parse wants them escaped.
  const strict = [...written]
    .map((c) => (isControl(c) ? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}` : c))
    .join('');
  const once = JSON.parse(strict) as string;
  return once.replace(
    /\\([bfnrt"\\])/g,
    (_match, c: string) => ({ b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' })[c] ?? c,
  );
}

/** The value with every object's keys inserted in sorted order (no integer-like key, no __proto__). */
function sortedKeys(value: Json): Json {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, sortedKeys(value[key] as Json)]),
    );
  return value;
}

describe('agentJson', () => {
  it('lays out like JSON.stringify with sorted keys where no string needs more', () => {
    const plain = fc.string().filter((text) => ![...text].some((c) => c === '\\' || isControl(c)));
    // JSON.stringify puts integer-like keys first and an object literal loses __proto__: left to the test below.
    const key = plain.filter((text) => !/^(0|[1-9][0-9]*)$/.test(text) && text !== '__proto__');
    const json: fc.Arbitrary<Json> = fc.letrec<{ value: Json }>((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        plain,
        fc.integer(),
        fc.boolean(),
        fc.constant(null),
        fc.array(tie('value'), { maxLength: 3 }),
        fc.dictionary(key, tie('value'), { maxKeys: 3 }),
      ),
    })).value;
    fc.assert(
      fc.property(json, (value) => expect(agentJson(value)).toBe(JSON.stringify(sortedKeys(value), null, 2))),
    );
  });

  it('orders keys by code unit, integer-like ones included, and keeps a key named __proto__', () => {
    const value = JSON.parse('{"9": 1, "10": 2, "b": 3, "__proto__": 4, "A": 5}') as Json;
    expect(agentJson(value)).toBe('{\n  "10": 2,\n  "9": 1,\n  "A": 5,\n  "__proto__": 4,\n  "b": 3\n}');
  });

  it('writes every string so that a double decoding gives it back', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        expect(readjsonString(agentJson(text))).toBe(text);
      }),
    );
  });
});
