import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { compileFleet } from './index/fleet-index';
import { generateNode } from './generate/generate';
import { explainNode } from './explain/explain';
import { loadFleet } from './validation/validate';

const examples = join(__dirname, '..', '..', '..', '..', '..', 'shared', 'examples');

function load(name: string) {
  const result = loadFleet(readFileSync(join(examples, `${name}.fleet.json`), 'utf8'), 'json');
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return compileFleet(result.fleet);
}

describe('the seed examples', () => {
  it('seed 000 worked example: policies (R0,C1), (R1,A1), (R1,B2) with values [C1,C2], [A1,A2], [B2,B1]', () => {
    const expected = JSON.parse(readFileSync(join(examples, 'seed-ordering.expected.json'), 'utf8'));
    const bundle = generateNode(load('seed-ordering'), 'node1');
    expect(bundle.status).toBe('ok');
    expect({
      nodeId: bundle.nodeId,
      policies: bundle.manifest?.policies.map((policy) => ({
        id: policy.id,
        directives: policy.directives.map((d) => d.id),
      })),
    }).toEqual(expected);
  });

  it('explains DNS as 10.75.0.53 from dns-override on parisian, and 10.0.0.1 from dns-default on plain', () => {
    const compiled = load('dns-override');
    const dns = (nodeId: string) =>
      explainNode(compiled, nodeId).variables.find((variable) => variable.variable === 'DNS');
    expect(dns('parisian')).toMatchObject({ value: '10.75.0.53', directiveId: 'dns-override' });
    expect(dns('parisian')?.overrides).toEqual([{ directiveId: 'dns-default', value: '10.0.0.1' }]);
    expect(dns('plain')).toMatchObject({ value: '10.0.0.1', directiveId: 'dns-default', overrides: [] });
  });

  it('declares the merged values in priority order, so the agent keeps the lowest-priority value', () => {
    const bundle = generateNode(load('dns-override'), 'parisian');
    const policy =
      bundle.files.find((file) => file.path.endsWith('generic_variable_definition.cf'))?.content ?? '';
    expect(policy.indexOf('"10.0.0.1"')).toBeLessThan(policy.indexOf('"10.75.0.53"'));
  });
});
