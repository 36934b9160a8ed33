import { createHash } from 'node:crypto';
import { compileValid, directive, fleetFile, rule, technique } from '../../testing/builders';
import { explainNode } from '../explain/explain';
import { nodeGraphDot } from '../explain/graph';
import { generateNode } from '../generate/generate';

const techniques = ['A', 'B', 'C', 'D'].map((id) => technique(id));
const base = (directives: unknown[], extra: Record<string, unknown> = {}) =>
  fleetFile({
    techniques,
    directives,
    rules: [
      rule(
        'r',
        ['a', 'b', 'c', 'd'].filter((id) => directives.some((d) => (d as { id: string }).id === id)),
      ),
    ],
    ...extra,
  });
const order = (input: unknown, options = {}) =>
  generateNode(compileValid(input), 'n1', options).manifest?.policies.map((p) => p.id);
const bundle = (input: unknown) => generateNode(compileValid(input), 'n1');

describe('ordering policies (semantics.md §3)', () => {
  it('defaults to (rule name, directive name)', () => {
    expect(order(base([directive('c', 'C'), directive('a', 'A'), directive('b', 'B')]))).toEqual([
      'A',
      'B',
      'C',
    ]);
  });

  it('before, require, notify, subscribe and -> / ~> all order their ends, and only those', () => {
    expect(
      order(base([directive('a', 'A'), directive('b', 'B', { before: ['a'] }), directive('c', 'C')])),
    ).toEqual(['B', 'A', 'C']);
    expect(
      order(base([directive('a', 'A', { require: ['c'] }), directive('b', 'B'), directive('c', 'C')])),
    ).toEqual(['B', 'C', 'A']);
    expect(
      order(base([directive('a', 'A'), directive('b', 'B'), directive('c', 'C', { notify: ['a'] })])),
    ).toEqual(['B', 'C', 'A']);
    expect(
      order(base([directive('a', 'A', { subscribe: ['b'] }), directive('b', 'B'), directive('c', 'C')])),
    ).toEqual(['B', 'A', 'C']);
    const chained = base([directive('a', 'A'), directive('b', 'B'), directive('c', 'C')], {
      relationships: [
        { from: 'c', to: 'a', kind: '->' },
        { from: 'b', to: 'c', kind: '~>' },
      ],
    });
    expect(order(chained)).toEqual(['B', 'C', 'A']);
  });

  it('records the relationships in the manifest `after`', () => {
    const manifest = bundle(base([directive('a', 'A', { require: ['b'] }), directive('b', 'B')])).manifest;
    expect(manifest?.policies.find((p) => p.id === 'A')?.after).toEqual(['B']);
  });

  it('a metaparameter naming a directive not applied here fails the node with Puppet-like messages', () => {
    const result = bundle(
      fleetFile({
        techniques,
        directives: [
          directive('a', 'A', { require: ['b'], before: ['c'] }),
          directive('b', 'B'),
          directive('c', 'C'),
        ],
        rules: [rule('r', ['a'])],
      }),
    );
    expect(result.status).toBe('failed');
    expect(result.errors.map((e) => [e.code, e.message])).toEqual([
      ['MISSING_DEPENDENCY', 'Could not find dependent Directive[c] for Directive[a]'],
      ['MISSING_DEPENDENCY', 'Could not find dependency Directive[b] for Directive[a]'],
    ]);
  });

  it('an overridden directive counts as not applied', () => {
    const result = bundle(
      fleetFile({
        techniques: [technique('U', { multiInstance: false }), technique('A')],
        directives: [
          directive('u1', 'U', { priority: 0 }),
          directive('u2', 'U', { priority: 9 }),
          directive('a', 'A', { require: ['u2'] }),
        ],
        rules: [rule('r', ['u1', 'u2', 'a'])],
      }),
    );
    expect(result.errors.map((e) => e.message)).toEqual([
      'Could not find dependency Directive[u2] for Directive[a]',
    ]);
  });

  it('fleet-wide relationships mean nothing on a node that lacks an end', () => {
    const input = fleetFile({
      techniques,
      directives: [directive('a', 'A'), directive('b', 'B')],
      relationships: [{ from: 'b', to: 'a', kind: '->' }],
      rules: [rule('r', ['a'])],
    });
    expect(bundle(input).status).toBe('ok');
  });

  it('an edge inside one policy is ignored, with a warning in the explanation', () => {
    const input = fleetFile({
      techniques,
      directives: [directive('a1', 'A', { before: ['a2'] }), directive('a2', 'A')],
      rules: [rule('r', ['a1', 'a2'])],
    });
    expect(bundle(input).status).toBe('ok');
    expect(explainNode(compileValid(input), 'n1').warnings).toEqual([
      'Relationship before between Directive[a1] and Directive[a2] is ignored: both are in policy A',
    ]);
  });

  it('reports every cycle, one shortest path each, in Puppet format', () => {
    const one = bundle(
      base([directive('a', 'A', { before: ['b'] }), directive('b', 'B', { before: ['a'] })]),
    );
    expect(one.errors).toEqual([
      expect.objectContaining({
        code: 'DEPENDENCY_CYCLE',
        message: 'Found 1 dependency cycle:\n(Directive[a] => Directive[b] => Directive[a])',
      }),
    ]);
    const two = bundle(
      base([
        directive('a', 'A', { before: ['b'] }),
        directive('b', 'B', { before: ['a'] }),
        directive('c', 'C', { require: ['d'] }),
        directive('d', 'D', { require: ['c'] }),
      ]),
    );
    expect(two.errors[0]?.message).toBe(
      'Found 2 dependency cycles:\n(Directive[a] => Directive[b] => Directive[a])\n(Directive[c] => Directive[d] => Directive[c])',
    );
    expect(
      nodeGraphDot(
        compileValid(base([directive('a', 'A', { before: ['b'] }), directive('b', 'B', { before: ['a'] })])),
        'n1',
      ),
    ).toContain('color=red');
  });

  it("title-hash orders unrelated policies by the SHA-1 of Puppet's salted title", () => {
    const key = (id: string) =>
      createHash('sha1').update(`NaCl, MgSO4 (salts) and then Directive[${id}]`).digest('hex');
    const input = base([directive('a', 'A'), directive('b', 'B'), directive('c', 'C'), directive('d', 'D')]);
    const expected = ['a', 'b', 'c', 'd']
      .sort((x, y) => (key(x) < key(y) ? -1 : 1))
      .map((id) => id.toUpperCase());
    expect(order(input, { ordering: 'title-hash' })).toEqual(expected);
  });

  it('random is a seeded shuffle: stable for a seed, different across seeds', () => {
    const directives = 'abcdefgh'
      .split('')
      .map((id) => ({ id, name: id, technique: 'T', parameters: { value: id } }));
    const input = (seed: number) =>
      fleetFile({
        settings: { ordering: 'random', orderingSeed: seed },
        techniques: [technique('T', { policyGeneration: 'separated' })],
        directives,
        rules: [rule('r', 'abcdefgh'.split(''))],
      });
    expect(order(input(1))).toEqual(order(input(1)));
    const orders = new Set([1, 2, 3, 4].map((seed) => JSON.stringify(order(input(seed)))));
    expect(orders.size).toBeGreaterThan(1);
  });

  it('the node property policygen_ordering overrides the fleet setting', () => {
    const input = fleetFile({
      techniques,
      directives: [directive('a', 'A'), directive('b', 'B'), directive('c', 'C'), directive('d', 'D')],
      rules: [rule('r', ['a', 'b', 'c', 'd'])],
      nodes: [{ id: 'n1', hostname: 'n1', properties: { policygen_ordering: 'title-hash' } }],
    });
    const result = bundle(input);
    expect(result.manifest?.ordering).toBe('title-hash');
    expect(result.manifest?.policies.map((p) => p.id)).toEqual(order(input, { ordering: 'title-hash' }));
  });
});
