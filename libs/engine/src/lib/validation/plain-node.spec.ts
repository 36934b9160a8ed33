import { parseEntity, plainNode } from './plain-node';

// The properties that hold the reader to the schema are in plain-entities.spec.ts, with the other kinds'.
describe('a node read without its schema', () => {
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
