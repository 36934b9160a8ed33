import { directive, fleetFile, rule, technique } from '../../testing/builders';
import type { Json } from '../model/json';
import fc from 'fast-check';
import type { PathSegment } from './json-path';
import { formatJsonPath } from './json-path';
import { checkCarriable, loadFleet, validateFleet } from './validate';

const issuesOf = (input: unknown) => {
  const result = validateFleet(input);
  return result.ok ? [] : result.issues.map((issue) => `${issue.path}: ${issue.message}`);
};

describe('fleet validation: every issue, with its JSON path', () => {
  it('accepts a minimal fleet and applies defaults', () => {
    const result = validateFleet(
      fleetFile({
        techniques: [technique('T')],
        directives: [directive('d', 'T')],
        rules: [rule('r', ['d'])],
      }),
    );
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.fleet.settings).toEqual({
      ordering: 'alphanumeric',
      orderingSeed: 0,
      policyMode: 'enforce',
      policyModeOverridable: true,
      parameterInheritModes: {},
      maxValueBytes: 65_536,
      maxBundleBytes: 16 * 1024 * 1024,
    });
    expect(result.fleet.directives[0]).toMatchObject({ priority: 5, enabled: true, before: [] });
    expect(result.fleet.nodes[0]).toMatchObject({ policyServer: 'root', state: 'enabled' });
  });

  it('holds values to settings.maxValueBytes, itself bounded', () => {
    const fleet = (settings: Record<string, unknown>) =>
      validateFleet({
        settings,
        parameters: { motd: 'x'.repeat(3_000) },
        nodes: [{ id: 'n', hostname: 'n' }],
      });
    expect(fleet({ maxValueBytes: 2_048 })).toEqual({
      ok: false,
      issues: [
        {
          path: '$.parameters.motd',
          message: 'is 3002 bytes as JSON, more than settings.maxValueBytes (2048)',
        },
      ],
    });
    expect(fleet({ maxValueBytes: 4_096 }).ok).toBe(true);
    const bounds = fleet({ maxValueBytes: 10, maxBundleBytes: 2 ** 40 });
    expect(bounds.ok ? [] : bounds.issues.map((issue) => issue.path)).toEqual([
      '$.settings.maxValueBytes',
      '$.settings.maxBundleBytes',
    ]);
  });

  it('reports unknown fields, wrong types, bad ids and priorities out of range together', () => {
    expect(
      issuesOf({
        extra: 1,
        nodes: [{ id: 'bad id', hostname: 3, colour: 'red' }],
        directives: [{ id: 'd', name: 'd', technique: 'T', priority: 11 }],
        techniques: [technique('T')],
      }).sort(),
    ).toEqual(
      [
        '$.extra: unknown field',
        '$.directives[0].priority: must be from 0 (highest) to 10 (lowest)',
        '$.nodes[0].colour: unknown field',
        '$.nodes[0].id: must match ^[A-Za-z0-9][A-Za-z0-9_.-]*$',
        '$.nodes[0].hostname: expected string, got number 3',
      ].sort(),
    );
  });

  it('reports duplicate ids, dangling references and unknown parameters', () => {
    const issues = issuesOf(
      fleetFile({
        techniques: [technique('T')],
        directives: [
          directive('d', 'T', { before: ['ghost'] }),
          directive('d', 'T'),
          directive('e', 'missing'),
          directive('f', 'T', { parameters: { typo: 1 } }),
        ],
        rules: [rule('r', ['d', 'nope'], { targets: ['group:g0', 'policyServer:r9'] })],
        groups: [{ id: 'g', name: 'g', nodes: ['n9'] }],
        nodes: [{ id: 'n1', hostname: 'h', policyServer: 'relay-x' }],
        relationships: [{ from: 'd', to: 'zz', kind: '->' }],
      }),
    );
    expect(issues).toEqual(
      expect.arrayContaining([
        '$.directives[1].id: duplicate directive d (first at $.directives[0])',
        '$.directives[0].before[0]: unknown directive ghost',
        '$.directives[2].technique: unknown technique missing',
        '$.directives[3].parameters.typo: technique T 1.0 has no parameter typo',
        '$.relationships[0].to: unknown directive zz',
        '$.rules[0].directives[1]: unknown directive nope',
        '$.rules[0].targets[0]: unknown group g0',
        '$.rules[0].targets[1]: unknown policy server r9 (root or a relay id)',
        '$.groups[0].nodes[0]: unknown node n9',
        '$.nodes[0].policyServer: unknown policy server relay-x (root or a relay id)',
      ]),
    );
  });

  it('reports unknown policyGeneration, group membership cycles and bad property namespaces', () => {
    const issues = issuesOf(
      fleetFile({
        techniques: [technique('T', { policyGeneration: 'splitted' })],
        groups: [
          { id: 'a', name: 'a', criteria: { all: [{ group: 'b' }] } },
          { id: 'b', name: 'b', criteria: { any: [{ group: 'a' }] }, properties: { 'bad-name': 1 } },
        ],
      }),
    );
    expect(issues).toEqual([
      '$.techniques[0].policyGeneration: must be one of "merged", "separated", "separated-with-parameters", "separated-with-param", got string "splitted"',
      '$.groups[1].properties["bad-name"]: property names (namespaces) must match ^[a-zA-Z0-9][a-zA-Z0-9_]*$',
      '$.groups[0].criteria: group membership cycle: a -> b -> a',
    ]);
  });

  it('reports criteria that cannot work and templates naming no parameter', () => {
    const issues = issuesOf(
      fleetFile({
        techniques: [
          technique('T', { promises: [{ type: 'vars', promiser: '{{nope}}', attributes: { string: 'x' } }] }),
        ],
        groups: [
          {
            id: 'g',
            name: 'g',
            criteria: {
              all: [
                { fact: 'x', op: 'regex', value: '(' },
                { fact: 'y', op: 'in', value: 'a' },
              ],
            },
          },
        ],
      }),
    );
    expect(issues).toEqual([
      '$.techniques[0].promises[0].promiser: {{nope}} names no parameter of the technique',
      expect.stringMatching(/^\$\.groups\[0\]\.criteria\.all\[0\]\.value: not a valid regular expression/),
      '$.groups[0].criteria.all[1].value: in needs a list of values',
    ]);
  });

  it('reserves the system bundle names', () => {
    expect(issuesOf(fleetFile({ techniques: [technique('node')] }))).toEqual([
      '$.techniques[0].id: node is reserved for a system bundle',
    ]);
  });

  it("refuses CFEngine's reserved words as technique ids and parameter names", () => {
    const words = ['sys', 'const', 'this', 'mon', 'match', 'edit', 'bundle', 'body', 'promise'];
    expect(issuesOf(fleetFile({ techniques: words.map((word) => technique(word)) }))).toEqual(
      words.map(
        (word, index) =>
          `$.techniques[${index}].id: ${word} is a reserved word of CFEngine: it cannot name a bundle`,
      ),
    );
    expect(
      issuesOf(
        fleetFile({ techniques: [technique('T', { parameters: [{ name: 'value' }, { name: 'this' }] })] }),
      ),
    ).toEqual([
      '$.techniques[0].parameters[1].name: this is a reserved word of CFEngine: it cannot name a bundle parameter',
    ]);
  });

  it("admits a promise's own classes only through the bodies the tree defines", () => {
    const withClasses = (classes: unknown) =>
      technique('T', { promises: [{ type: 'commands', promiser: '/bin/true', attributes: { classes } }] });
    expect(
      issuesOf(fleetFile({ techniques: [withClasses({ call: 'policygen_if_repaired', args: ['a'] })] })),
    ).toEqual([]);
    expect(
      issuesOf(fleetFile({ techniques: [withClasses({ call: 'policygen_classes', args: ['a,b', 'c'] })] })),
    ).toEqual([]);
    for (const refused of [
      { call: 'if_repaired', args: ['a'] },
      { call: 'policygen_classes', args: ['a'] },
      'a',
    ])
      expect(issuesOf(fleetFile({ techniques: [withClasses(refused)] }))).toEqual([
        '$.techniques[0].promises[0].attributes.classes: must call policygen_if_repaired(class) or policygen_classes(repaired, failed) (comma-separated class lists): the generated tree defines no other classes body',
      ]);
  });

  it('refuses what CFEngine cannot carry (NUL, lone surrogates) wherever it is, naming the place', () => {
    expect(
      issuesOf(
        fleetFile({
          parameters: { motd: 'a\u0000b' },
          techniques: [technique('T')],
          directives: [directive('d', 'T', { parameters: { value: ['ok', { deep: 'x\u0000' }] } })],
          rules: [rule('r', ['d'])],
          nodes: [
            {
              id: 'n1',
              hostname: 'n1.example.com',
              properties: { site: { 'k\u0000': 1, lone: 'a\ud800b' } },
            },
            { id: 'n2', hostname: 'n2\u0000.example.com' },
          ],
        }),
      ),
    ).toEqual([
      '$.parameters.motd: must not contain NUL (\\u0000): CFEngine cannot carry it',
      '$.nodes[1].hostname: must not contain spaces or control characters',
      '$.directives[0].parameters.value[1].deep: must not contain NUL (\\u0000): CFEngine cannot carry it',
      '$.nodes[0].properties.site["k\\u0000"]: its name must not contain NUL (\\u0000): CFEngine cannot carry it',
      '$.nodes[0].properties.site.lone: must be valid Unicode (a lone surrogate has no UTF-8 form)',
    ]);
  });

  it('reports malformed policy and inheritance modes, and techniques setting action', () => {
    const result = validateFleet(
      fleetFile({
        settings: { policyMode: 'warn' },
        techniques: [
          technique('t', {
            promises: [{ type: 'files', promiser: '/tmp/x', attributes: { action: { call: 'warn_only' } } }],
          }),
        ],
        groups: [{ id: 'g', name: 'g', properties: { a: 1 }, inheritModes: { a: 'xyz' } }],
        nodes: [{ id: 'n1', hostname: 'h', policyMode: 'off' }],
      }),
    );
    expect(!result.ok && result.issues.map((issue) => issue.path).sort()).toEqual([
      '$.groups[0].inheritModes.a',
      '$.nodes[0].policyMode',
      '$.settings.policyMode',
      '$.techniques[0].promises[0].attributes.action',
    ]);
  });

  it('reports an inheritance mode of a property its level does not set', () => {
    const result = validateFleet(
      fleetFile({
        settings: { parameterInheritModes: { dns: 'mao', missing: 'moo' } },
        parameters: { dns: ['1.1.1.1'] },
        groups: [{ id: 'g', name: 'g', properties: { a: 1 }, inheritModes: { a: 'moa', b: 'moo' } }],
        nodes: [{ id: 'n1', hostname: 'h', properties: {}, inheritModes: { c: 'moo' } }],
      }),
    );
    expect(!result.ok && result.issues).toEqual([
      {
        path: '$.settings.parameterInheritModes.missing',
        message: 'missing is not set at this level: a mode goes with the value it combines',
      },
      { path: '$.groups[0].inheritModes.b', message: expect.stringContaining('b is not set at this level') },
      { path: '$.nodes[0].inheritModes.c', message: expect.stringContaining('c is not set at this level') },
    ]);
  });

  it('refuses ids, values and documents beyond the limits with their JSON path, without a crash', () => {
    const nested = (levels: number): Json => {
      let value: Json = 'x';
      for (let level = 0; level < levels; level++) value = { a: value };
      return value;
    };
    const result = validateFleet(
      fleetFile({
        parameters: { big: 'é'.repeat(40_000), fine: 'x'.repeat(1000) },
        nodes: [
          {
            id: 'n'.repeat(10_000),
            hostname: 'h'.repeat(254),
            properties: { deep: nested(40), shallow: nested(31) },
          },
        ],
      }),
    );
    expect(!result.ok && result.issues).toEqual([
      {
        path: '$.parameters.big',
        message: 'is 80002 bytes as JSON, more than settings.maxValueBytes (65536)',
      },
      { path: '$.nodes[0].id', message: 'must be at most 128 characters' },
      { path: '$.nodes[0].hostname', message: 'must be at most 253 characters' },
    ]);
    const controls = validateFleet(
      fleetFile({
        techniques: [technique('t', { name: 'T\u0007' })],
        directives: [directive('d', 't', { name: 'first line\nsecond line' })],
        rules: [rule('r', ['d'], { name: 'x'.repeat(1025) })],
        nodes: [
          { id: 'n1', hostname: 'web1.example.com\n"; evil' },
          { id: 'n2', hostname: 'a b' },
        ],
      }),
    );
    expect(!controls.ok && controls.issues).toEqual([
      {
        path: '$.techniques[0].name',
        message: 'must not contain control characters (U+0000–U+001F, U+007F)',
      },
      {
        path: '$.directives[0].name',
        message: 'must not contain control characters (U+0000–U+001F, U+007F)',
      },
      { path: '$.rules[0].name', message: 'must be at most 1024 characters' },
      { path: '$.nodes[0].hostname', message: 'must not contain spaces or control characters' },
      { path: '$.nodes[1].hostname', message: 'must not contain spaces or control characters' },
    ]);
    const deepProperty = validateFleet(
      fleetFile({ nodes: [{ id: 'n1', hostname: 'h', properties: { deep: nested(40) } }] }),
    );
    expect(!deepProperty.ok && deepProperty.issues).toEqual([
      {
        path: `$.nodes[0].properties.deep${'.a'.repeat(32)}`,
        message: 'is nested more than 32 levels deep',
      },
    ]);
    // A document nested far deeper than any recursion could follow is refused before it is read.
    for (const levels of [3_000, 100_000]) {
      const deep = validateFleet(fleetFile({ parameters: { deep: nested(levels) } }));
      expect(!deep.ok && deep.issues).toEqual([
        {
          path: `$.parameters.deep${'.a'.repeat(62)}`,
          message: 'is nested more than 64 levels deep in the document: it was not read further',
        },
      ]);
    }
  });

  it('reads YAML and reports syntax errors with their place', () => {
    expect(loadFleet('nodes:\n  - id: n1\n    hostname: h\n', 'yaml').ok).toBe(true);
    const broken = loadFleet('nodes: [\n', 'yaml');
    expect(!broken.ok && broken.issues[0]?.message).toMatch(/^not valid YAML at line \d+, column \d+/);
    const json = loadFleet('{"nodes": [', 'json');
    expect(!json.ok && json.issues[0]?.path).toBe('$');
  });
});

describe('text CFEngine cannot carry', () => {
  const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
  const kind = (text: string): string | undefined =>
    text.includes('\u0000')
      ? 'NUL'
      : text.includes('\uFDD0')
        ? 'U+FDD0'
        : LONE_SURROGATE.test(text)
          ? 'lone surrogate'
          : undefined;
  /** The check as first written: every text scanned three times, a path built for every value. The reference. */
  function referenceIssues(value: Json, path: PathSegment[], found: string[]): void {
    if (typeof value === 'string') {
      const issue = kind(value);
      if (issue) found.push(`${formatJsonPath(path)} ${issue}`);
    } else if (Array.isArray(value))
      value.forEach((item, index) => referenceIssues(item, [...path, index], found));
    else if (value !== null && typeof value === 'object')
      for (const [key, item] of Object.entries(value)) {
        const issue = kind(key);
        if (issue) found.push(`${formatJsonPath([...path, key])} ${issue}`);
        referenceIssues(item, [...path, key], found);
      }
  }
  const text = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 6 }),
    fc.constantFrom('a\u0000', '\uFDD0', '\uD83D\uDE00', '\uDE00\uD83D', 'x\uD800', '\uDC00x', 'plain'),
  );
  const { value } = fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: 'small' },
      text,
      fc.constantFrom(null, 1, true),
      fc.array(tie('value'), { maxLength: 3 }),
      fc.dictionary(text, tie('value'), { maxKeys: 3, noNullPrototype: true }),
    ),
  }));

  it('is found where a three-scan check finds it, at the same paths, in the same order', () => {
    let withIssues = 0;
    fc.assert(
      fc.property(value, (input) => {
        const expected: string[] = [];
        referenceIssues(input as Json, ['p'], expected);
        const found: string[] = [];
        checkCarriable(input as Json, ['p'], (path, message) =>
          found.push(
            `${formatJsonPath(path)} ${/NUL/.test(message) ? 'NUL' : /FDD0/.test(message) ? 'U+FDD0' : 'lone surrogate'}`,
          ),
        );
        expect(found).toEqual(expected);
        if (expected.length > 0) withIssues++;
      }),
      { numRuns: 1000 },
    );
    expect(withIssues).toBeGreaterThan(100);
  });
});
