/** A small fleet touching every kind of entity, built entity by entity through the API in the tests. */

export const packageTechnique = {
  id: 'pkg',
  version: '1.0',
  name: 'Package',
  parameters: [{ name: 'package', required: true }],
  promises: [{ type: 'packages', promiser: '{{package}}' }],
};

export function packageDirective(id: string, pkg: string): Record<string, unknown> {
  return { id, name: `Install ${pkg}`, technique: 'pkg', parameters: { package: pkg } };
}

export const webGroup = {
  id: 'g-web',
  name: 'Web servers',
  nodes: ['n1'],
  criteria: { all: [{ fact: 'os.name', op: 'eq', value: 'Debian' }] },
};

export const relayEu = { id: 'relay-eu', policyServer: 'root' };

export function node(id: string, policyServer = 'root'): Record<string, unknown> {
  return { id, hostname: `${id}.example.com`, policyServer, facts: { os: { name: 'Debian' } } };
}

export const baseRule = {
  id: 'r-base',
  name: 'Base',
  directives: ['d-ssh'],
  targets: { include: ['group:g-web'] },
};

/** The fleet file of the entities above. */
export function smallFleet(): Record<string, unknown> {
  return {
    settings: { ordering: 'alphanumeric' },
    parameters: { dns_server: '10.0.0.1' },
    techniques: [packageTechnique],
    directives: [packageDirective('d-ssh', 'openssh-server'), packageDirective('d-vim', 'vim')],
    relationships: [{ from: 'd-ssh', to: 'd-vim', kind: '->' }],
    rules: [baseRule],
    groups: [webGroup],
    nodes: [node('n1'), node('n2', 'relay-eu')],
    relays: [relayEu],
  };
}
