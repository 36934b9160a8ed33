import { join } from 'node:path';
import type { NodeExplanation } from '@policygen/engine';
import {
  ANSI_ESCAPE,
  EXAMPLES,
  STACK_LINE,
  buildCli,
  removeDir,
  runCli,
  tempDir,
  writeJson,
} from '../testing/cli-harness';
import { cyclicFleet, okFleet } from '../testing/fleets';

const DNS_EXAMPLE = join(EXAMPLES, 'dns-override.fleet.json');

describe('policygen explain and graph', () => {
  let dir: string;

  beforeAll(() => buildCli());
  beforeEach(() => {
    dir = tempDir('explain');
  });
  afterEach(() => removeDir(dir));

  it('explains a node as text on stdout', () => {
    const result = runCli(['explain', '--fleet', DNS_EXAMPLE, '--node', 'parisian']);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('parisian');
    expect(result.stdout).toContain('dns-override');
    expect(result.stdout).not.toMatch(ANSI_ESCAPE);
  });

  it('explains a node as JSON with --json: which directive sets each variable', () => {
    const explain = (nodeId: string): NodeExplanation => {
      const result = runCli(['explain', '--fleet', DNS_EXAMPLE, '--node', nodeId, '--json']);
      expect(result.status).toBe(0);
      return JSON.parse(result.stdout) as NodeExplanation;
    };
    const parisian = explain('parisian');
    expect(parisian).toMatchObject({ nodeId: 'parisian', status: 'ok' });
    const dns = (explanation: NodeExplanation) => explanation.variables.find((v) => v.variable === 'DNS');
    expect(dns(parisian)).toMatchObject({ value: '10.75.0.53', directiveId: 'dns-override' });
    expect(dns(parisian)?.overrides).toEqual([{ directiveId: 'dns-default', value: '10.0.0.1' }]);
    expect(dns(explain('plain'))).toMatchObject({ value: '10.0.0.1', directiveId: 'dns-default' });
  });

  it("says each policy's mode and where it came from, and a merged policy whose directives disagree", () => {
    const vars = (id: string, policyGeneration: string) => ({
      id,
      version: '1.0',
      name: id,
      multiInstance: true,
      policyGeneration,
      parameters: [{ name: 'value', required: true }],
      promises: [{ type: 'vars', promiser: 'v', attributes: { string: '{{value}}' } }],
    });
    const fleet = writeJson(join(dir, 'modes.fleet.json'), {
      settings: { policyMode: 'audit' },
      techniques: [vars('m', 'merged'), vars('s', 'separated')],
      directives: [
        { id: 'a', name: 'a', technique: 'm', parameters: { value: 'a' } },
        { id: 'b', name: 'b', technique: 'm', parameters: { value: 'b' }, policyMode: 'enforce' },
        { id: 'c', name: 'c', technique: 's', parameters: { value: 'c' } },
      ],
      rules: [{ id: 'r', name: 'r', directives: ['a', 'b', 'c'], targets: ['special:all'] }],
      nodes: [
        { id: 'n1', hostname: 'n1.example.com', properties: { tags: ['x'] }, inheritModes: { tags: 'mao' } },
      ],
    });
    const result = runCli(['explain', '--fleet', fleet, '--node', 'n1']);
    expect(result.status).toBe(0);
    expect(result.stdout).toContain(
      '     policy mode: mixed: its directives disagree, each runs in its own mode — a audit (from the global setting), b enforce (from the directive)\n',
    );
    expect(result.stdout).toContain('     policy mode: audit (from the global setting)\n');
    expect(result.stdout).toContain('  tags = ["x"] from node, inheritance mode mao\n');
  });

  it('exits 2 with a message for an unknown node', () => {
    for (const command of ['explain', 'graph']) {
      const result = runCli([command, '--fleet', DNS_EXAMPLE, '--node', 'ghost']);
      expect(result.status).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toBe('policygen: unknown node: ghost (not in the fleet)\n');
    }
  });

  it('exits 2 without --node', () => {
    const result = runCli(['explain', '--fleet', DNS_EXAMPLE]);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('--node');
    expect(result.stderr).not.toMatch(STACK_LINE);
  });

  it("prints the node's policy graph in DOT", () => {
    const fleet = writeJson(join(dir, 'ok.fleet.json'), okFleet());
    const result = runCli(['graph', '--fleet', fleet, '--node', 'n1']);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^\s*(strict\s+)?digraph\b/);
    expect(result.stdout.trimEnd().endsWith('}')).toBe(true);
  });

  it('draws a dependency cycle in red, and explains the failure', () => {
    const fleet = writeJson(join(dir, 'cyclic.fleet.json'), cyclicFleet());
    const graph = runCli(['graph', '--fleet', fleet, '--node', 'n1']);
    expect(graph.status).toBe(0);
    expect(graph.stdout).toMatch(/red/);

    const explain = runCli(['explain', '--fleet', fleet, '--node', 'n1', '--json']);
    expect(explain.status).toBe(0);
    const explanation = JSON.parse(explain.stdout) as NodeExplanation;
    expect(explanation.status).toBe('failed');
    expect(explanation.errors.map((error) => error.code)).toEqual(['DEPENDENCY_CYCLE']);
  });
});
