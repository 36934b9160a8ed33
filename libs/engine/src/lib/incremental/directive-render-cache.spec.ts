import { generateNode } from '../generate/generate';
import { compileFleet } from '../index/fleet-index';
import { validateFleet } from '../validation/validate';
import { GenerationEngine } from './engine';

/**
 * Found by the incremental property test (seed -2138303961): two directives of one unique
 * technique with equal values, d0 overridden by d1 once it moves to another version. The files
 * name the directive they are rendered for, so a rendering of d0's cannot stand for d1's.
 */
const technique = (version: string, promiser: string) => ({
  id: 't0',
  version,
  name: `Technique 0 ${version}`,
  multiInstance: false,
  parameters: [{ name: 'p0', required: false }],
  promises: [{ type: 'vars', promiser, attributes: { string: 'value {{p0}}' } }],
});
const directive = (id: string, techniqueVersion: string) => ({
  id,
  name: 'a',
  technique: 't0',
  techniqueVersion,
  parameters: { p0: '${rudder.node.policyserver.id}' },
});
const fleet = {
  parameters: {},
  techniques: [technique('1.0', 'v0'), technique('2.0', 'v50')],
  directives: [directive('d0', '1.0'), directive('d1', '1.0')],
  relationships: [],
  rules: [
    { id: 'r0', name: 'R', directives: ['d1'], targets: 'policyServer:root' },
    { id: 'r1', name: 'R', directives: ['d0'], targets: { include: ['special:all'], exclude: [] } },
  ],
  groups: [],
  nodes: [
    {
      id: 'n0',
      hostname: 'n0.example.com',
      policyServer: 'root',
      state: 'enabled',
      facts: { os: { name: 'Debian', version: '12' }, arch: 'x86_64' },
      properties: {},
      policyMode: 'audit',
    },
  ],
  relays: [],
};

describe('a rendering kept for later', () => {
  it('stands only for the directives it was rendered for: incremental equals full', () => {
    const validated = validateFleet(fleet);
    if (!validated.ok) throw new Error(JSON.stringify(validated.issues));
    const engine = GenerationEngine.fromFleet(validated.fleet, {});
    engine.regenerate();
    expect(engine.apply({ upsert: { directives: [directive('d0', '2.0')] } })).toMatchObject({ ok: true });
    engine.regenerate();

    const full = generateNode(compileFleet(engine.toFleet()), 'n0', { generatedAt: 1 });
    const incremental = engine.bundle('n0', { generatedAt: 1 });
    expect(incremental.hash).toBe(full.hash);
    const policyFile = (bundle: typeof full) => bundle.files.find((file) => file.path.endsWith('/t0.cf'));
    expect(policyFile(incremental)?.content).toContain('Directive[d1]');
    expect(policyFile(incremental)?.content).toBe(policyFile(full)?.content);
  });
});
