import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { runAgent } from '@policygen/testing-agent';
import { awkwardText } from '../../testing/awkward-text';
import { compileValid, fleetFile, rule } from '../../testing/builders';
import { generateNode } from '../generate/generate';
import { validateFleet } from '../validation/validate';

/**
 * `node.<namespace>` as the real `cf-agent` builds it (semantics.md §5): every `*.json` of the
 * tree's `properties.d/` in lexical order, then the local override directory's, merged at the
 * first level of each namespace.
 */

const OPTIONS = { generatedAt: 1_700_000_000_000, revision: 1 } as const;

/** Reports each namespace the agent has, as compact JSON. */
const SHOW = {
  id: 'show',
  version: '1.0',
  name: 'Show the properties',
  parameters: [],
  promises: ['properties', 'custom', 'later', 'tree'].flatMap((namespace) => [
    {
      type: 'vars',
      promiser: namespace,
      attributes: { string: { call: 'format', args: ['%S', `node.${namespace}`] } },
    },
    { type: 'reports', promiser: `${namespace}=$(${namespace})` },
  ]),
};

function treeOf(): Map<string, string> {
  const fleet = fleetFile({
    techniques: [SHOW],
    directives: [{ id: 'show', name: 'show', technique: 'show' }],
    rules: [rule('r', ['show'])],
    groups: [{ id: 'g', name: 'g', nodes: ['n1'], properties: { site: { city: 'Paris', floor: 2 } } }],
    nodes: [
      {
        id: 'n1',
        hostname: 'n1.example.com',
        properties: { site: { rack: 'A1' }, role: 'web', ports: [80, 443] },
      },
    ],
  });
  const bundle = generateNode(compileValid(fleet), 'n1', OPTIONS);
  if (bundle.status !== 'ok') throw new Error(JSON.stringify(bundle.errors));
  return new Map(bundle.files.map((file) => [file.path, file.content]));
}

/** The namespaces the agent reported, parsed. */
function reported(reports: readonly string[]): Record<string, unknown> {
  const namespaces: Record<string, unknown> = {};
  for (const line of reports) {
    const [, name, json] = /^(\w+)=(.*)$/.exec(line) ?? [];
    if (name && json && !json.startsWith('$(')) namespaces[name] = JSON.parse(json);
  }
  return namespaces;
}

describe('properties on the agent', () => {
  it("gets what each property's inheritance mode makes of its levels (global, group, node)", () => {
    const fleet = fleetFile({
      settings: { parameterInheritModes: { dns: 'mao' } },
      parameters: { dns: ['10.0.0.1'], banner: 'Welcome', site: { city: 'Paris', floor: 1 }, tags: ['base'] },
      techniques: [SHOW],
      directives: [{ id: 'show', name: 'show', technique: 'show' }],
      rules: [rule('r', ['show'])],
      groups: [
        {
          id: 'g',
          name: 'g',
          nodes: ['n1'],
          properties: { dns: ['10.0.0.2'], banner: ' to g', site: { city: 'Lyon' }, tags: ['g'] },
          inheritModes: { banner: 'ooa', site: 'ooo' },
        },
      ],
      nodes: [
        {
          id: 'n1',
          hostname: 'n1.example.com',
          properties: { dns: ['10.9.9.9'], banner: 'Hello: ', tags: ['n1'] },
          inheritModes: { banner: 'oop', tags: 'mpo' },
        },
      ],
    });
    const bundle = generateNode(compileValid(fleet), 'n1', OPTIONS);
    if (bundle.status !== 'ok') throw new Error(JSON.stringify(bundle.errors));
    const result = runAgent(new Map(bundle.files.map((file) => [file.path, file.content])));
    result.remove();
    expect(result.rejected).toBeNull();
    expect(reported(result.reports)).toEqual({
      properties: {
        // The global `mao` holds for the levels below, which set none: each appends.
        dns: ['10.0.0.1', '10.0.0.2', '10.9.9.9'],
        // The group appends its string, the node prepends its own.
        banner: 'Hello: Welcome to g',
        // The group overrides the whole object; the node leaves it.
        site: { city: 'Lyon' },
        // Default `moo` up to the group (it replaces), then the node prepends.
        tags: ['n1', 'g'],
      },
    });
  });

  it('gets the value of the group below two disagreeing groups: Rudder settles the conflict there', () => {
    const fleet = fleetFile({
      techniques: [SHOW],
      directives: [{ id: 'show', name: 'show', technique: 'show' }],
      rules: [rule('r', ['show'])],
      groups: [
        { id: 'ga', name: 'A', nodes: ['n1'], properties: { dc: 'Paris' } },
        { id: 'gb', name: 'B', nodes: ['n1'], properties: { dc: 'Lyon' } },
        {
          id: 'gc',
          name: 'C',
          criteria: { all: [{ group: 'ga' }, { group: 'gb' }] },
          properties: { dc: 'Nantes' },
        },
      ],
    });
    const bundle = generateNode(compileValid(fleet), 'n1', OPTIONS);
    if (bundle.status !== 'ok') throw new Error(JSON.stringify(bundle.errors));
    const result = runAgent(new Map(bundle.files.map((file) => [file.path, file.content])));
    result.remove();
    expect(result.rejected).toBeNull();
    expect(reported(result.reports)).toEqual({ properties: { dc: 'Nantes' } });
  });

  it('gives the generated properties as node.properties when there is no other file', () => {
    const result = runAgent(treeOf());
    result.remove();
    expect(result.rejected).toBeNull();
    expect(reported(result.reports)).toEqual({
      properties: { site: { city: 'Paris', floor: 2, rack: 'A1' }, role: 'web', ports: [80, 443] },
    });
  });

  it('reads every json file of properties.d, then the local ones, in lexical order; each namespace merged at its first level', () => {
    const result = runAgent(treeOf(), {
      files: {
        // Another file of the tree's properties.d, after properties.json.
        '{dir}/inputs/properties.d/zz-tree.json': JSON.stringify({
          properties: { role: 'tree' },
          tree: { from: 'tree' },
        }),
      },
      localProperties: {
        // 10 sorts before 9 (lexical order): 9's site wins over 10's.
        '10-site.json': JSON.stringify({ properties: { site: { building: 'B' } }, custom: { a: 1, b: 1 } }),
        '9-custom.json': JSON.stringify({ properties: { site: { floor: 9 } }, custom: { b: 2 } }),
        'later.json': JSON.stringify({ later: { x: [1] }, 'not-a-name': { y: 1 } }),
        'broken.json': '{"properties": ',
        'ignored.txt': JSON.stringify({ properties: { role: 'txt' } }),
      },
    });
    result.remove();
    // The broken file is named, and left out; nothing else is wrong.
    const errors = (result.rejected ?? '').split('\n').filter((line) => /error:/.test(line));
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.filter((line) => !line.includes('broken.json'))).toEqual([]);
    expect(reported(result.reports)).toEqual({
      // site is replaced whole by the last file giving it; role by the tree's second file.
      properties: { site: { floor: 9 }, role: 'tree', ports: [80, 443] },
      custom: { a: 1, b: 2 },
      later: { x: [1] },
      tree: { from: 'tree' },
    });
  });

  it('gives every property value to the agent byte for byte, or refuses it at validation (fast-check)', () => {
    const value = awkwardText(12);
    const COUNT = 25;
    fc.assert(
      fc.property(fc.array(value, { minLength: COUNT, maxLength: COUNT }), (values) => {
        const writing = {
          ...SHOW,
          promises: values.map((_value, index) => ({
            type: 'files',
            promiser: `$(sys.workdir)/out/${index}`,
            attributes: { create: 'true', content: `$(node.properties[values][${index}])` },
          })),
        };
        const fleetOf = (texts: readonly string[]) =>
          fleetFile({
            techniques: [writing],
            directives: [{ id: 'show', name: 'show', technique: 'show' }],
            rules: [rule('r', ['show'])],
            nodes: [{ id: 'n1', hostname: 'n1.example.com', properties: { values: texts } }],
          });
        // A NUL is refused, naming its place; the agent gets every other value exactly.
        const refused = values.flatMap((text, index) =>
          text.includes('\u0000') ? [`$.nodes[0].properties.values[${index}]`] : [],
        );
        const validation = validateFleet(fleetOf(values));
        expect(validation.ok ? [] : validation.issues.map((issue) => issue.path)).toEqual(refused);
        const carried = values.map((text) => text.replaceAll('\u0000', ''));
        const bundle = generateNode(compileValid(fleetOf(carried)), 'n1', OPTIONS);
        const result = runAgent(new Map(bundle.files.map((file) => [file.path, file.content])));
        try {
          expect(result.rejected).toBeNull();
          const read = carried.map((_text, index) =>
            readFileSync(join(result.dir, 'out', String(index)), 'utf8'),
          );
          expect(read).toEqual(carried);
        } finally {
          result.remove();
        }
      }),
      { numRuns: 12 },
    );
  });
});
