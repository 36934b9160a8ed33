import fc from 'fast-check';
import { nodeSchema } from '../model/fleet';
import { parseEntity, plainNode } from './plain-node';
import { looseJson, tricky } from '../../testing/loose-json-arbitrary';

const plainJson = fc.jsonValue({ maxDepth: 3 });

/** Node-shaped values: mostly valid, each field sometimes absent, odd, or replaced. */
const nodeLike = fc
  .record(
    {
      id: fc.oneof(fc.constantFrom('node-1', 'n.2', 'N_3'), tricky),
      hostname: fc.oneof(fc.constantFrom('node-1.example.com', 'h'), tricky),
      policyServer: fc.oneof(fc.constantFrom('root', 'relay-1'), tricky, looseJson),
      state: fc.oneof(fc.constantFrom('enabled', 'ignored', 'empty-policies', 'disabled'), looseJson),
      facts: fc.oneof(
        fc.dictionary(fc.string(), plainJson, { maxKeys: 4, noNullPrototype: true }),
        looseJson,
      ),
      properties: fc.oneof(
        fc.dictionary(fc.string(), plainJson, { maxKeys: 4, noNullPrototype: true }),
        looseJson,
      ),
      inheritModes: fc.oneof(
        fc.dictionary(fc.string(), fc.constantFrom('moo', 'oap', 'mmm', 'MOO'), { noNullPrototype: true }),
        looseJson,
      ),
      policyMode: fc.oneof(fc.constantFrom('enforce', 'audit', 'Audit'), looseJson),
      other: looseJson,
    },
    { requiredKeys: [] },
  )
  .map((value) => ({ ...value }));

/** A node exactly as an export or a bench fleet writes it. */
const plainNodeInput = fc
  .record(
    {
      id: fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,20}$/),
      hostname: fc.stringMatching(/^[a-z0-9.-]{1,40}$/),
      policyServer: fc.constantFrom('root', 'relay-1'),
      state: fc.constantFrom('enabled', 'ignored', 'empty-policies'),
      facts: fc.dictionary(fc.string(), plainJson, { maxKeys: 6, noNullPrototype: true }),
      properties: fc.dictionary(fc.string(), plainJson, { maxKeys: 6, noNullPrototype: true }),
      inheritModes: fc.dictionary(fc.string(), fc.constantFrom('moo', 'oap', 'mpa'), {
        noNullPrototype: true,
      }),
      policyMode: fc.constantFrom('enforce', 'audit'),
    },
    { requiredKeys: ['id', 'hostname'] },
  )
  .map((value) => ({ ...value }));

describe('a node read without its schema', () => {
  it('is never looser than the schema, and equal to what it parses, key order included', () => {
    let read = 0;
    fc.assert(
      fc.property(fc.oneof(nodeLike, plainNodeInput, looseJson), (value) => {
        const fast = plainNode(value);
        if (fast === null) return;
        read++;
        const parsed = nodeSchema.safeParse(value);
        expect(parsed.success).toBe(true);
        expect(fast).toEqual(parsed.data);
        expect(JSON.stringify(fast)).toBe(JSON.stringify(parsed.data));
      }),
      { numRuns: 3000 },
    );
    // The shortcut is taken often enough for the comparison to mean something.
    expect(read).toBeGreaterThan(300);
  });

  it('reads every node in the plain shape, defaults applied as the schema applies them', () => {
    fc.assert(
      fc.property(plainNodeInput, (value) => {
        // A `__proto__` key is the schema's to read (it is no member once copied).
        fc.pre(!JSON.stringify(value).includes('"__proto__"'));
        const fast = plainNode(value);
        expect(fast).not.toBeNull();
        expect(JSON.stringify(fast)).toBe(JSON.stringify(nodeSchema.parse(value)));
      }),
    );
  });

  it('leaves to the schema what JSON cannot hold or the schema refuses', () => {
    const node = { id: 'n', hostname: 'h' };
    for (const odd of [
      { ...node, facts: { a: Number.NaN } },
      { ...node, properties: { a: [1, , 2] } }, // eslint-disable-line no-sparse-arrays
      { ...node, properties: JSON.parse('{"__proto__": {"x": 1}}') as object },
      { ...node, facts: { when: new Date(0) } },
      { ...node, facts: Object.create(null) as object },
      { ...node, policyMode: undefined },
      { ...node, hostname: 'a b' },
      { ...node, id: 'x'.repeat(129) },
      { ...node, extra: 1 },
      { ...node, inheritModes: { a: 'MOO' } },
    ])
      expect(plainNode(odd)).toBeNull();
  });

  it('names what is wrong with a node through the schema', () => {
    const result = parseEntity('nodes', { id: 'n', hostname: 'a b' });
    expect(result).toMatchObject({ success: false, error: { issues: [{ path: ['hostname'] }] } });
  });
});
