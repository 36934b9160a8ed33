import fc from 'fast-check';
import type { Json } from '../model/json';
import { agentJson } from './agent-json';
import { prettyCanonicalJson } from './node-files';

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

describe('agentJson', () => {
  it('lays out like JSON.stringify with sorted keys where no string needs more', () => {
    const plain = fc.string().filter((text) => ![...text].some((c) => c === '\\' || isControl(c)));
    const json: fc.Arbitrary<Json> = fc.letrec<{ value: Json }>((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        plain,
        fc.integer(),
        fc.boolean(),
        fc.constant(null),
        fc.array(tie('value'), { maxLength: 3 }),
        fc.dictionary(plain, tie('value'), { maxKeys: 3 }),
      ),
    })).value;
    fc.assert(fc.property(json, (value) => expect(agentJson(value)).toBe(prettyCanonicalJson(value))));
  });

  it('writes every string so that a double decoding gives it back', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        expect(readjsonString(agentJson(text))).toBe(text);
      }),
    );
  });
});
