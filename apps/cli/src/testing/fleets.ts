/** Small fleet files for the CLI's end-to-end tests, in the format of fleet-format.md. */

const reportTechnique = (id: string) => ({
  id,
  version: '1.0',
  name: `Technique ${id}`,
  multiInstance: true,
  policyGeneration: 'merged',
  parameters: [{ name: 'text', required: true }],
  promises: [{ type: 'reports', promiser: `${id}: {{text}}` }],
});

const node = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  hostname: `${id}.example.com`,
  policyServer: 'root',
  facts: { os: { name: 'Debian', version: '12' } },
  properties: {},
  ...extra,
});

/** Three nodes, one ignored; everything generates. */
export function okFleet() {
  return {
    settings: { ordering: 'alphanumeric' },
    parameters: { greeting: 'hello' },
    techniques: [reportTechnique('motd_report'), reportTechnique('audit_report')],
    directives: [
      {
        id: 'greet',
        name: 'Greeting',
        technique: 'motd_report',
        parameters: { text: '${rudder.param.greeting} ${rudder.node.hostname}' },
      },
      {
        id: 'audit',
        name: 'Audit',
        technique: 'audit_report',
        parameters: { text: 'audited' },
        require: ['greet'],
      },
    ],
    rules: [{ id: 'r-all', name: '10. All', directives: ['greet', 'audit'], targets: ['special:all'] }],
    groups: [],
    nodes: [node('n1'), node('n2'), node('n3', { state: 'ignored' })],
    relays: [],
  };
}

/**
 * `a` requires `b`, but `b` is applied on n1 only: n2 fails with MISSING_DEPENDENCY, n1 succeeds.
 */
export function failingFleet() {
  return {
    techniques: [reportTechnique('ta'), reportTechnique('tb')],
    directives: [
      { id: 'a', name: 'A', technique: 'ta', parameters: { text: 'a' }, require: ['b'] },
      { id: 'b', name: 'B', technique: 'tb', parameters: { text: 'b' } },
    ],
    rules: [
      { id: 'r-all', name: '10. All', directives: ['a'], targets: ['special:all'] },
      { id: 'r-one', name: '20. One', directives: ['b'], targets: ['group:g-one'] },
    ],
    groups: [{ id: 'g-one', name: 'One', nodes: ['n1'] }],
    nodes: [node('n1'), node('n2')],
  };
}

/** `a` before `b` and `b` before `a`: a dependency cycle on the only node. */
export function cyclicFleet() {
  return {
    techniques: [reportTechnique('ta'), reportTechnique('tb')],
    directives: [
      { id: 'a', name: 'A', technique: 'ta', parameters: { text: 'a' }, before: ['b'] },
      { id: 'b', name: 'B', technique: 'tb', parameters: { text: 'b' }, before: ['a'] },
    ],
    rules: [{ id: 'r-all', name: '10. All', directives: ['a', 'b'], targets: ['special:all'] }],
    nodes: [node('n1')],
  };
}

/**
 * Several problems at once: a wrong type, an unknown field, a dangling reference, a duplicate id.
 */
export function invalidFleet() {
  return {
    techniques: [reportTechnique('ta')],
    directives: [{ id: 'd', name: 'D', technique: 'ta', priority: 'high', parameters: { text: 'x' } }],
    rules: [{ id: 'r', name: 'R', directives: ['nope'], targets: ['special:all'] }],
    nodes: [node('n1', { colour: 'blue' }), node('n2'), node('n2')],
  };
}
