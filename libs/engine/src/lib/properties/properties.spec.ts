import { compileValid, directive, fleetFile, rule, technique } from '../../testing/builders';
import { explainNode } from '../explain/explain';
import { generateNode } from '../generate/generate';
import { mergeValues } from './inherit';

const propertiesFile = (input: unknown, nodeId = 'n1') =>
  JSON.parse(
    generateNode(compileValid(input), nodeId).files.find((f) => f.path.endsWith('properties.json'))
      ?.content ?? 'null',
  );

describe('property inheritance (semantics.md §5)', () => {
  it('merges objects key by key; other values and type changes replace', () => {
    expect(mergeValues({ a: { x: 1, y: 2 }, l: [1, 2] }, { a: { y: 3, z: 4 }, l: [3] })).toEqual({
      a: { x: 1, y: 3, z: 4 },
      l: [3],
    });
    expect(mergeValues({ a: { x: 1 } }, { a: 'text' })).toEqual({ a: 'text' });
  });

  it.each([
    // [less specific, more specific, mode, merged]: objects (1st letter), arrays (2nd), strings (3rd).
    [{ a: 1, o: { x: 1 } }, { o: { y: 2 } }, 'moo', { a: 1, o: { x: 1, y: 2 } }],
    [{ a: 1, o: { x: 1 } }, { o: { y: 2 } }, 'ooo', { o: { y: 2 } }],
    [[1, 2], [3], 'moo', [3]],
    [[1, 2], [3], 'mao', [1, 2, 3]],
    [[1, 2], [3], 'mpo', [3, 1, 2]],
    ['ab', 'cd', 'moo', 'cd'],
    ['ab', 'cd', 'moa', 'abcd'],
    ['ab', 'cd', 'mop', 'cdab'],
    // The mode holds inside objects, at every depth.
    [
      { l: [1], s: 'a', o: { l: [2] } },
      { l: [3], s: 'b', o: { l: [4] } },
      'maa',
      { l: [1, 3], s: 'ab', o: { l: [2, 4] } },
    ],
    // Different kinds replace whatever the mode.
    [[1], 'x', 'maa', 'x'],
    ['x', ['y'], 'maa', ['y']],
    [{ a: 1 }, [1], 'mao', [1]],
    [5, 6, 'maa', 6],
  ])('merges %j with %j in mode %s into %j', (less, more, mode, merged) => {
    expect(mergeValues(less, more, mode)).toEqual(merged);
  });

  it('keeps a __proto__ key of a value as a key, never as a prototype', () => {
    const less = JSON.parse('{"o": {"__proto__": {"a": 1}}}');
    const more = JSON.parse('{"o": {"__proto__": {"b": 2}}}');
    const merged = mergeValues(less, more) as Record<string, Record<string, unknown>>;
    expect(JSON.stringify(merged)).toBe('{"o":{"__proto__":{"a":1,"b":2}}}');
    expect(Object.getPrototypeOf(merged['o'])).toBe(Object.prototype);
  });

  it("each level's inheritance mode holds for the levels below it until one sets another; explain names it", () => {
    const input = fleetFile({
      settings: { parameterInheritModes: { dns: 'mao' } },
      parameters: { dns: ['a'], motd: 'hello' },
      groups: [
        {
          id: 'parent',
          name: 'P',
          nodes: ['n1'],
          properties: { dns: ['b'], motd: ' world' },
          inheritModes: { motd: 'ooa' },
        },
        {
          id: 'child',
          name: 'C',
          criteria: { all: [{ group: 'parent' }] },
          properties: { dns: ['c'] },
          inheritModes: { dns: 'mpo' },
        },
      ],
      nodes: [{ id: 'n1', hostname: 'n1', properties: { dns: ['d'], motd: '!' } }],
    });
    expect(propertiesFile(input)).toEqual({
      // a, then b appended (global mao), c prepended (child mpo), d prepended (inherited mpo).
      properties: { dns: ['d', 'c', 'a', 'b'], motd: 'hello world!' },
    });
    const explained = explainNode(compileValid(input), 'n1').properties;
    expect(explained.map((property) => [property.name, property.inheritMode])).toEqual([
      ['dns', 'mpo'],
      ['motd', 'ooa'],
    ]);
  });

  it('global parameters, then groups parents first, then the node; written as {"properties": ...}', () => {
    const input = fleetFile({
      parameters: { dc: { name: 'global', ntp: 'pool' }, owner: 'ops' },
      groups: [
        { id: 'parent', name: 'P', nodes: ['n1'], properties: { dc: { name: 'parent', dns: '1.1.1.1' } } },
        {
          id: 'child',
          name: 'C',
          criteria: { all: [{ group: 'parent' }] },
          properties: { dc: { name: 'child' } },
        },
      ],
      nodes: [{ id: 'n1', hostname: 'n1', properties: { owner: 'alice' } }],
    });
    expect(propertiesFile(input)).toEqual({
      properties: { dc: { name: 'child', dns: '1.1.1.1', ntp: 'pool' }, owner: 'alice' },
    });
    const explained = explainNode(compileValid(input), 'n1').properties.find((p) => p.name === 'dc');
    expect(explained).toMatchObject({ source: 'group', groupId: 'child' });
    expect(explained?.overrides.map((o) => (o.source === 'group' ? o.groupId : o.source))).toEqual([
      'global',
      'parent',
    ]);
  });

  it('unrelated groups giving a property different values fail the node with PROPERTY_CONFLICT; equal values are fine', () => {
    const input = (b: unknown) =>
      fleetFile({
        groups: [
          { id: 'ga', name: 'A', nodes: ['n1'], properties: { dc: 'Paris' } },
          { id: 'gb', name: 'B', nodes: ['n1'], properties: { dc: b } },
        ],
      });
    const failed = generateNode(compileValid(input('Lyon')), 'n1');
    expect(failed.status).toBe('failed');
    expect(failed.errors).toEqual([
      expect.objectContaining({
        code: 'PROPERTY_CONFLICT',
        groupIds: ['ga', 'gb'],
        message: expect.stringContaining('Property dc'),
      }),
    ]);
    expect(generateNode(compileValid(input('Paris')), 'n1').status).toBe('ok');
  });

  it('a conflict of two groups is settled by a group below both that sets the property itself', () => {
    const input = (settler: Record<string, unknown>) =>
      fleetFile({
        groups: [
          { id: 'ga', name: 'A', nodes: ['n1'], properties: { dc: 'Paris' } },
          { id: 'gb', name: 'B', nodes: ['n1'], properties: { dc: 'Lyon' } },
          { id: 'gc', name: 'C', criteria: { all: [{ group: 'ga' }, { group: 'gb' }] }, ...settler },
        ],
      });
    const settled = generateNode(compileValid(input({ properties: { dc: 'Nantes' } })), 'n1');
    expect(settled.status).toBe('ok');
    expect(settled.manifest?.properties).toEqual({ dc: 'Nantes' });
    // Below both, but silent on dc: still a conflict.
    const silent = generateNode(compileValid(input({ properties: { other: 1 } })), 'n1');
    expect(silent.errors).toEqual([
      expect.objectContaining({ code: 'PROPERTY_CONFLICT', groupIds: ['ga', 'gb'] }),
    ]);
  });
});

describe('generation-time references in directive values', () => {
  const withValue = (value: string, extra: Record<string, unknown> = {}) =>
    generateNode(
      compileValid(
        fleetFile({
          parameters: { dns: '10.0.0.1', list: [1, 'a'] },
          techniques: [technique('T')],
          directives: [directive('d', 'T', { parameters: { value } })],
          rules: [rule('r', ['d'])],
          nodes: [
            {
              id: 'n1',
              hostname: 'host.example.com',
              policyServer: 'root',
              properties: { dc: { dns: '10.75.0.53', n: 3 } },
            },
          ],
          ...extra,
        }),
      ),
      'n1',
    );
  const rendered = (value: string) =>
    withValue(value).files.find((f) => f.path.endsWith('/T.cf'))?.content ?? '';

  it('expands node properties, parameters, node id, hostname and policy server', () => {
    expect(rendered('${node.properties[dc][dns]}')).toContain('string => "10.75.0.53"');
    expect(rendered('${node.properties[dc]}')).toContain(
      'string => "{\\"dns\\":\\"10.75.0.53\\",\\"n\\":3}"',
    );
    expect(rendered('${rudder.param.dns}/${rudder.param.list}')).toContain(
      'string => "10.0.0.1/[1,\\"a\\"]"',
    );
    expect(rendered('${rudder.node.id} ${rudder.node.hostname} ${rudder.node.policyserver.id}')).toContain(
      'string => "n1 host.example.com root"',
    );
  });

  it('uses the default of a reference that resolves to nothing, and leaves agent variables alone', () => {
    expect(rendered('${node.properties[nope] | default = "fallback \\"q\\""}')).toContain(
      'string => "fallback \\"q\\""',
    );
    expect(rendered('$(sys.host) ${sys.fqhost}')).toContain('string => "$(sys.host) ${sys.fqhost}"');
  });

  it('fails the node with UNKNOWN_VARIABLE naming the directive and the reference', () => {
    const result = withValue('${rudder.param.missing}');
    expect(result.status).toBe('failed');
    expect(result.errors).toEqual([
      expect.objectContaining({
        code: 'UNKNOWN_VARIABLE',
        directiveIds: ['d'],
        message: expect.stringContaining('${rudder.param.missing}'),
      }),
    ]);
  });

  it("uses defaults that are references themselves, to any depth (Rudder's TestNodeAndGlobalParameterLookup)", () => {
    expect(rendered('${node.properties[nope]|default=${rudder.node.hostname}}')).toContain(
      'string => "host.example.com"',
    );
    expect(
      rendered(
        'at ${node.properties[a] | default = ${rudder.param.nope | default = ${node.properties[dc][dns]}}} and ${rudder.node.id}',
      ),
    ).toContain('string => "at 10.75.0.53 and n1"');
    expect(
      rendered('${node.properties[a] | default = ${rudder.param.nope | default = "deep \\"text\\""}}'),
    ).toContain('string => "deep \\"text\\""');
  });

  it('fails the node with UNKNOWN_VARIABLE when no default of a nested chain resolves, never half-expanded', () => {
    const written = '${node.properties[a] | default = ${rudder.param.nope}}';
    const result = withValue(`x ${written} y`);
    expect(result.status).toBe('failed');
    expect(result.errors).toEqual([
      expect.objectContaining({ code: 'UNKNOWN_VARIABLE', message: expect.stringContaining(written) }),
    ]);
  });

  it('fails the node with MISSING_PARAMETER when a required parameter has no value', () => {
    const result = generateNode(
      compileValid(
        fleetFile({
          techniques: [technique('T')],
          directives: [{ id: 'd', name: 'd', technique: 'T' }],
          rules: [rule('r', ['d'])],
        }),
      ),
      'n1',
    );
    expect(result.errors.map((e) => e.code)).toEqual(['MISSING_PARAMETER']);
  });
});
