import { compileValid, directive, fleetFile, rule, technique } from '../../testing/builders';
import { generateNode } from '../generate/generate';

const nodes = [
  { id: 'root', hostname: 'root.example.com', policyServer: 'root' },
  { id: 'relay1', hostname: 'relay1.example.com', policyServer: 'root' },
  {
    id: 'web1',
    hostname: 'web1',
    policyServer: 'relay1',
    facts: { os: { name: 'Debian', version: '12.10' }, role: 'web', cpus: 8 },
  },
  {
    id: 'web2',
    hostname: 'web2',
    policyServer: 'root',
    facts: { os: { name: 'Ubuntu', version: '12.9' }, role: 'web', cpus: 2 },
    properties: { dc: 'Paris' },
  },
  {
    id: 'db1',
    hostname: 'db1',
    policyServer: 'root',
    facts: { os: { name: 'Debian', version: '11' }, role: 'db' },
  },
];

function targeted(
  targets: unknown,
  groups: unknown[] = [],
  ruleExtra: Record<string, unknown> = {},
  nodeList: unknown[] = nodes,
): string[] {
  const compiled = compileValid(
    fleetFile({
      techniques: [technique('T')],
      directives: [directive('d', 'T')],
      rules: [rule('r', ['d'], { targets, ...ruleExtra })],
      groups,
      nodes: nodeList,
      relays: [{ id: 'relay1', policyServer: 'root' }],
    }),
  );
  return compiled.nodeIds.filter((id) => (generateNode(compiled, id).manifest?.policies.length ?? 0) > 0);
}

const group = (id: string, criteria: unknown, extra: Record<string, unknown> = {}) => ({
  id,
  name: id,
  criteria,
  ...extra,
});

describe('rule targets (semantics.md §1)', () => {
  it('special:all and special:all_exceptPolicyServers', () => {
    expect(targeted(['special:all'])).toEqual(['db1', 'relay1', 'root', 'web1', 'web2']);
    expect(targeted(['special:all_exceptPolicyServers'])).toEqual(['db1', 'web1', 'web2']);
  });

  it('policyServer:<id> selects the nodes of that relay', () => {
    expect(targeted(['policyServer:relay1'])).toEqual(['web1']);
  });

  it('or is a union, and an intersection, empty and is every node; include minus exclude', () => {
    const groups = [
      group('web', { all: [{ fact: 'role', op: 'eq', value: 'web' }] }),
      group('debian', { all: [{ fact: 'os.name', op: 'eq', value: 'Debian' }] }),
    ];
    expect(targeted({ or: ['group:web', 'group:debian'] }, groups)).toEqual(['db1', 'web1', 'web2']);
    expect(targeted({ and: ['group:web', 'group:debian'] }, groups)).toEqual(['web1']);
    expect(targeted({ and: [] }, groups)).toEqual(['db1', 'relay1', 'root', 'web1', 'web2']);
    expect(targeted({ include: ['special:all'], exclude: ['group:web'] }, groups)).toEqual([
      'db1',
      'relay1',
      'root',
    ]);
  });

  it('a rule whose target names a disabled group is not applied at all', () => {
    const groups = [group('web', { all: [{ fact: 'role', op: 'eq', value: 'web' }] }, { enabled: false })];
    expect(targeted({ include: ['special:all'], exclude: ['group:web'] }, groups)).toEqual([]);
  });

  it('a disabled rule applies nowhere', () => {
    expect(targeted(['special:all'], [], { enabled: false })).toEqual([]);
  });

  it('ignored nodes get nothing; empty-policies nodes get only system policies', () => {
    const compiled = compileValid(
      fleetFile({
        techniques: [technique('T')],
        directives: [directive('d', 'T')],
        rules: [rule('r', ['d'])],
        nodes: [
          { id: 'a', hostname: 'a', state: 'ignored' },
          { id: 'b', hostname: 'b', state: 'empty-policies' },
        ],
      }),
    );
    const ignored = generateNode(compiled, 'a');
    expect(ignored).toMatchObject({ status: 'ignored', files: [], manifest: null });
    const empty = generateNode(compiled, 'b');
    expect(empty.status).toBe('ok');
    expect(empty.manifest?.policies).toEqual([]);
    expect(empty.files.find((f) => f.path.endsWith('promises.cf'))?.content).toContain(
      'bundlesequence => { "policygen_node", "policygen_properties", "node" }',
    );
  });
});

describe('group membership (fleet-format.md criteria)', () => {
  const members = (criteria: unknown, extra: Record<string, unknown> = {}) =>
    targeted(['group:g'], [group('g', criteria, extra)]);

  it('every criterion operator', () => {
    expect(members({ all: [{ fact: 'os.name', op: 'eq', value: 'Debian' }] })).toEqual(['db1', 'web1']);
    expect(members({ all: [{ fact: 'os.name', op: 'neq', value: 'Debian' }] })).toEqual(['web2']);
    expect(members({ all: [{ fact: 'os.name', op: 'regex', value: 'bunt' }] })).toEqual(['web2']);
    expect(members({ all: [{ fact: 'os.name', op: 'regex', value: '^bunt' }] })).toEqual([]);
    expect(members({ all: [{ fact: 'cpus', op: 'exists' }] })).toEqual(['web1', 'web2']);
    expect(members({ all: [{ fact: 'cpus', op: 'notExists' }] })).toEqual(['db1', 'relay1', 'root']);
    expect(members({ all: [{ fact: 'role', op: 'in', value: ['db', 'cache'] }] })).toEqual(['db1']);
    expect(members({ all: [{ fact: 'cpus', op: 'gt', value: 4 }] })).toEqual(['web1']);
    expect(members({ all: [{ fact: 'cpus', op: 'le', value: 2 }] })).toEqual(['web2']);
    // dotted versions compare part by part: 12.10 > 12.9 > 11
    expect(members({ all: [{ fact: 'os.version', op: 'gt', value: '12.9' }] })).toEqual(['web1']);
    expect(members({ all: [{ fact: 'os.version', op: 'lt', value: '12' }] })).toEqual(['db1']);
    expect(members({ all: [{ fact: 'os.version', op: 'ge', value: '12.9' }] })).toEqual(['web1', 'web2']);
  });

  it('a criterion on a missing fact is false, neq included', () => {
    expect(members({ all: [{ fact: 'role', op: 'neq', value: 'web' }] })).toEqual(['db1']);
  });

  it("node properties criteria see the node's own properties; any / all; static members add up", () => {
    expect(members({ all: [{ property: 'dc', op: 'eq', value: 'Paris' }] })).toEqual(['web2']);
    expect(
      members({
        any: [
          { fact: 'role', op: 'eq', value: 'db' },
          { property: 'dc', op: 'eq', value: 'Paris' },
        ],
      }),
    ).toEqual(['db1', 'web2']);
    expect(members({ all: [{ fact: 'role', op: 'eq', value: 'db' }] }, { nodes: ['root'] })).toEqual([
      'db1',
      'root',
    ]);
  });

  it('subgroups: a {group} criterion is membership of the other group', () => {
    const groups = [
      group('debian', { all: [{ fact: 'os.name', op: 'eq', value: 'Debian' }] }),
      group('g', { all: [{ group: 'debian' }, { fact: 'role', op: 'eq', value: 'web' }] }),
    ];
    expect(targeted(['group:g'], groups)).toEqual(['web1']);
  });
});
