import { compareCaseInsensitive } from '../text/compare';
import { compileValid, directive, fleetFile, rule, technique } from '../../testing/builders';
import { generateNode } from '../generate/generate';
import { validateFleet } from '../validation/validate';

const policiesOf = (input: unknown, nodeId = 'n1') =>
  generateNode(compileValid(input), nodeId).manifest?.policies ?? [];

describe('case-insensitive ordering (Java CASE_INSENSITIVE_ORDER)', () => {
  it('ignores case, is not numeric-aware, and orders shorter prefixes first', () => {
    expect(compareCaseInsensitive('abc', 'ABC')).toBe(0);
    expect(compareCaseInsensitive('a', 'B')).toBeLessThan(0);
    expect(compareCaseInsensitive('B', 'a')).toBeGreaterThan(0);
    expect(compareCaseInsensitive('50', '100')).toBeGreaterThan(0);
    expect(compareCaseInsensitive('ab', 'abc')).toBeLessThan(0);
    // '_' (0x5F) sorts after letters once they are lower-cased, as in Java.
    expect(compareCaseInsensitive('A_', 'Aa')).toBeLessThan(0);
  });
});

describe('merging drafts of one technique (semantics.md §2)', () => {
  it('a unique technique keeps the highest-priority draft and records the others as overridden by it', () => {
    const policies = policiesOf(
      fleetFile({
        techniques: [technique('T', { multiInstance: false })],
        directives: [directive('low', 'T', { priority: 9 }), directive('high', 'T', { priority: 1 })],
        rules: [rule('r1', ['low', 'high'])],
      }),
    );
    expect(policies).toHaveLength(1);
    expect(policies[0]).toMatchObject({
      id: 'T',
      generation: 'unique',
      directives: [{ id: 'high', rule: 'r1', priority: 1 }],
    });
    expect(policies[0]?.overridden).toEqual([{ id: 'low', rule: 'r1', priority: 9, by: 'high' }]);
  });

  it('merged values follow priority, then rule name, then directive name, case-insensitively', () => {
    const policies = policiesOf(
      fleetFile({
        techniques: [technique('T')],
        directives: [
          directive('d1', 'T', { name: 'b', priority: 5 }),
          directive('d2', 'T', { name: 'A', priority: 5 }),
          directive('d3', 'T', { name: 'z', priority: 0 }),
          directive('d4', 'T', { name: 'a', priority: 5 }),
        ],
        rules: [
          rule('r2', ['d1'], { name: '100' }),
          rule('r1', ['d2', 'd3'], { name: '50' }),
          rule('r3', ['d4'], { name: '100' }),
        ],
      }),
    );
    // d3 first (priority 0); then rule "100" < "50" (not numeric); within "100": "a" < "b".
    expect(policies[0]?.directives.map((d) => d.id)).toEqual(['d3', 'd4', 'd1', 'd2']);
  });

  it('ties on every name are broken by techniqueVersion_directiveId', () => {
    const policies = policiesOf(
      fleetFile({
        techniques: [technique('T')],
        directives: [directive('y', 'T', { name: 'same' }), directive('x', 'T', { name: 'same' })],
        rules: [rule('r', ['y', 'x'])],
      }),
    );
    expect(policies[0]?.directives.map((d) => d.id)).toEqual(['x', 'y']);
  });

  it('the same (rule, directive) pair counts once, and a directive reached by two rules gives one value', () => {
    const policies = policiesOf(
      fleetFile({
        techniques: [technique('T')],
        directives: [directive('d', 'T')],
        rules: [rule('r1', ['d', 'd']), rule('r2', ['d'])],
      }),
    );
    expect(policies[0]?.directives).toEqual([
      { id: 'd', rule: 'r1', priority: 5, mode: 'enforce', modeSource: 'global' },
    ]);
  });

  it('separated techniques give one policy per directive, the directive counted once (first rule by name)', () => {
    const policies = policiesOf(
      fleetFile({
        techniques: [technique('S', { policyGeneration: 'separated' })],
        directives: [directive('d1', 'S'), directive('d2', 'S')],
        rules: [rule('rb', ['d1'], { name: 'b' }), rule('ra', ['d1', 'd2'], { name: 'a' })],
      }),
    );
    expect(policies.map((p) => [p.id, p.generation, p.directives])).toEqual([
      ['S:d1', 'separated', [{ id: 'd1', rule: 'ra', priority: 5, mode: 'enforce', modeSource: 'global' }]],
      ['S:d2', 'separated', [{ id: 'd2', rule: 'ra', priority: 5, mode: 'enforce', modeSource: 'global' }]],
    ]);
  });

  it('accepts separated-with-param as an alias and rejects an unknown policyGeneration', () => {
    const alias = validateFleet(
      fleetFile({ techniques: [technique('S', { policyGeneration: 'separated-with-param' })] }),
    );
    expect(alias.ok && alias.fleet.techniques[0]?.policyGeneration).toBe('separated-with-parameters');
    const unknown = validateFleet(fleetFile({ techniques: [technique('S', { policyGeneration: 'mergd' })] }));
    expect(unknown.ok).toBe(false);
    expect(!unknown.ok && unknown.issues[0]?.path).toBe('$.techniques[0].policyGeneration');
  });

  it("a merged policy's position is its smallest (rule, directive) by name, whatever the priorities", () => {
    const policies = policiesOf(
      fleetFile({
        techniques: [technique('A'), technique('B')],
        directives: [
          directive('a1', 'A', { priority: 0 }),
          directive('a2', 'A', { priority: 10 }),
          directive('b1', 'B'),
        ],
        rules: [
          rule('r1', ['a1'], { name: '30' }),
          rule('r2', ['a2'], { name: '10' }),
          rule('r3', ['b1'], { name: '20' }),
        ],
      }),
    );
    // A holds (10, a2): before B's (20, b1) although a2 has the lowest priority.
    expect(policies.map((p) => p.id)).toEqual(['A', 'B']);
    expect(policies[0]?.directives.map((d) => d.id)).toEqual(['a1', 'a2']);
  });

  it('mixing versions of a merged technique on one node fails it with TECHNIQUE_VERSION_CONFLICT', () => {
    const bundle = generateNode(
      compileValid(
        fleetFile({
          techniques: [technique('T'), technique('T', { version: '2.0' })],
          directives: [
            directive('d1', 'T', { techniqueVersion: '1.0' }),
            directive('d2', 'T', { techniqueVersion: '2.0' }),
          ],
          rules: [rule('r', ['d1', 'd2'])],
        }),
      ),
      'n1',
    );
    expect(bundle.status).toBe('failed');
    expect(bundle.errors.map((e) => e.code)).toEqual(['TECHNIQUE_VERSION_CONFLICT']);
    expect(bundle.files.map((f) => f.path)).toEqual(['policy-manifest.json']);
  });

  it("merges each draft as its own version says: merged 1.0 [a, b] and separated 3.0 [c] side by side (Rudder's PolicyAgregationTest)", () => {
    const fleet = (names: [string, string, string]) =>
      fleetFile({
        techniques: [technique('T'), technique('T', { version: '3.0', policyGeneration: 'separated' })],
        directives: [
          directive('a', 'T', { name: names[0], techniqueVersion: '1.0' }),
          directive('b', 'T', { name: names[1], techniqueVersion: '1.0' }),
          directive('c', 'T', { name: names[2], techniqueVersion: '3.0' }),
        ],
        rules: [rule('r', ['a', 'b', 'c'])],
      });
    // Whichever name comes first, the result is the same.
    for (const names of [
      ['a', 'b', 'c'],
      ['x', 'y', 'a'],
    ] as [string, string, string][]) {
      const policies = policiesOf(fleet(names));
      expect(
        policies.map((policy) => ({
          id: policy.id,
          version: policy.technique.version,
          generation: policy.generation,
          directives: policy.directives.map((d) => d.id),
        })),
      ).toEqual(
        expect.arrayContaining([
          { id: 'T', version: '1.0', generation: 'merged', directives: ['a', 'b'] },
          { id: 'T:c', version: '3.0', generation: 'separated', directives: ['c'] },
        ]),
      );
      expect(policies).toHaveLength(2);
    }
  });

  it('lists every losing (rule, directive) draft of a unique technique, its rule and its winner', () => {
    const policies = policiesOf(
      fleetFile({
        techniques: [technique('T', { multiInstance: false })],
        directives: [directive('d1', 'T', { priority: 1 }), directive('d2', 'T', { priority: 2 })],
        rules: [rule('r1', ['d1', 'd2']), rule('r2', ['d1', 'd2'])],
      }),
    );
    expect(policies).toHaveLength(1);
    expect(policies[0]?.directives).toEqual([
      { id: 'd1', rule: 'r1', priority: 1, mode: 'enforce', modeSource: 'global' },
    ]);
    expect(policies[0]?.overridden).toEqual([
      { id: 'd1', rule: 'r2', priority: 1, by: 'd1' },
      { id: 'd2', rule: 'r1', priority: 2, by: 'd1' },
      { id: 'd2', rule: 'r2', priority: 2, by: 'd1' },
    ]);
  });

  it('a technique unique in one version and merged in another on one node is a TECHNIQUE_VERSION_CONFLICT', () => {
    const bundle = generateNode(
      compileValid(
        fleetFile({
          techniques: [technique('T', { multiInstance: false }), technique('T', { version: '2.0' })],
          directives: [
            directive('d1', 'T', { techniqueVersion: '1.0' }),
            directive('d2', 'T', { techniqueVersion: '2.0' }),
          ],
          rules: [rule('r', ['d1', 'd2'])],
        }),
      ),
      'n1',
    );
    expect(bundle.errors).toEqual([
      expect.objectContaining({
        code: 'TECHNIQUE_VERSION_CONFLICT',
        message: 'Technique T is used both unique and merged on this node: 1.0 (d1), 2.0 (d2)',
      }),
    ]);
  });
});
