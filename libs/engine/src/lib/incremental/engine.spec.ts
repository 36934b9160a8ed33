import { compileValid, directive, fleetFile, rule, technique } from '../../testing/builders';
import { generateNode } from '../generate/generate';
import { validateFleet } from '../validation/validate';
import type { Fleet } from '../model/fleet';
import type { Json } from '../model/json';
import { compileFleet } from '../index/fleet-index';
import { GenerationEngine } from './engine';

function fleetOf(input: unknown): Fleet {
  const result = validateFleet(input);
  if (!result.ok) throw new Error(result.issues.map((issue) => `${issue.path}: ${issue.message}`).join('\n'));
  return result.fleet;
}

const BASE = fleetFile({
  parameters: { dns: '10.0.0.1' },
  techniques: [technique('t_vars'), technique('t_other', { multiInstance: false })],
  directives: [
    directive('d1', 't_vars'),
    directive('d2', 't_vars', { parameters: { value: '${rudder.param.dns}' } }),
    directive('d3', 't_other', { parameters: { value: '${node.properties[site] | default = "none"}' } }),
  ],
  rules: [rule('r-all', ['d1']), rule('r-web', ['d2', 'd3'], { targets: ['group:g-web'] })],
  groups: [
    {
      id: 'g-web',
      name: 'web',
      criteria: { all: [{ fact: 'role', op: 'eq', value: 'web' }] },
      properties: { tier: 'front' },
    },
  ],
  nodes: [
    { id: 'n1', hostname: 'n1.example.com', facts: { role: 'web' }, properties: { site: 'par' } },
    { id: 'n2', hostname: 'n2.example.com', facts: { role: 'db' } },
    { id: 'n3', hostname: 'n3.example.com', facts: { role: 'web' } },
  ],
});

function expectEqualsFullGeneration(engine: GenerationEngine): void {
  const compiled = compileValid(engine.toFleet());
  for (const nodeId of compiled.nodeIds) {
    const reference = generateNode(compiled, nodeId, { revision: engine.revision });
    expect(engine.result(nodeId)?.hash).toBe(reference.hash);
    expect(engine.bundle(nodeId)).toEqual(reference);
  }
}

describe('the incremental engine', () => {
  it('generates every node as the direct path does', () => {
    const engine = GenerationEngine.fromFleet(fleetOf(BASE));
    const run = engine.regenerate();
    expect(run.recomputed).toBe(3);
    expect(run.changed).toEqual(['n1', 'n2', 'n3']);
    expectEqualsFullGeneration(engine);
  });

  it('touches only the node whose property changed', () => {
    const engine = GenerationEngine.fromFleet(fleetOf(BASE));
    engine.regenerate();
    const outcome = engine.apply({
      upsert: {
        nodes: [
          { id: 'n1', hostname: 'n1.example.com', facts: { role: 'web' }, properties: { site: 'lyo' } },
        ],
      },
    });
    expect(outcome).toMatchObject({ ok: true, revision: 1, affected: ['n1'] });
    expect(engine.regenerate()).toMatchObject({ recomputed: 1, changed: ['n1'] });
    expectEqualsFullGeneration(engine);
  });

  it('follows a facts change into group membership and rules', () => {
    const engine = GenerationEngine.fromFleet(fleetOf(BASE));
    engine.regenerate();
    const outcome = engine.apply({
      upsert: { nodes: [{ id: 'n2', hostname: 'n2.example.com', facts: { role: 'web' } }] },
    });
    expect(outcome).toMatchObject({ ok: true, affected: ['n2'] });
    expect(engine.regenerate().changed).toEqual(['n2']);
    expectEqualsFullGeneration(engine);
  });

  it('ignores a facts change that moves no membership', () => {
    const engine = GenerationEngine.fromFleet(fleetOf(BASE));
    engine.regenerate();
    const outcome = engine.apply({
      upsert: { nodes: [{ id: 'n2', hostname: 'n2.example.com', facts: { role: 'db', arch: 'arm' } }] },
    });
    expect(outcome).toMatchObject({ ok: true, affected: [] });
  });

  it('reaches the nodes of the rules carrying a changed directive', () => {
    const engine = GenerationEngine.fromFleet(fleetOf(BASE));
    engine.regenerate();
    const outcome = engine.apply({
      upsert: { directives: [directive('d3', 't_other', { parameters: { value: 'fixed' } })] },
    });
    expect(outcome).toMatchObject({ ok: true, affected: ['n1', 'n3'] });
    expect(engine.regenerate().changed).toEqual(['n1', 'n3']);
    expectEqualsFullGeneration(engine);
  });

  it('reaches only the nodes a global parameter shows in', () => {
    const engine = GenerationEngine.fromFleet(fleetOf(BASE));
    engine.regenerate();
    expect(engine.apply({ upsert: { parameters: { dns: '10.0.0.2' } } })).toMatchObject({
      ok: true,
      affected: ['n1', 'n2', 'n3'],
    });
    engine.regenerate();
    expectEqualsFullGeneration(engine);
  });

  it('rejects an invalid change set whole and stays at its revision', () => {
    const engine = GenerationEngine.fromFleet(fleetOf(BASE));
    engine.regenerate();
    const outcome = engine.apply({
      upsert: { rules: [rule('r-new', ['d-missing'])], nodes: [{ id: 'n4', hostname: 'n4' }] },
      delete: { directives: ['d1'] },
    });
    expect(outcome).toMatchObject({
      ok: false,
      revision: 0,
      issues: expect.arrayContaining([
        { path: '$.upsert.rules[0].directives[0]', message: 'unknown directive d-missing' },
        { path: '$.delete.directives[0]', message: 'rules[r-all].directives[0]: unknown directive d1' },
      ]),
    });
    expect(engine.compiled.nodes.has('n4')).toBe(false);
    expect(engine.pendingNodes()).toEqual([]);
  });

  it('reaches every node on a policy mode setting, one node on its own mode', () => {
    const engine = GenerationEngine.fromFleet(fleetOf(BASE));
    engine.regenerate();
    expect(engine.apply({ upsert: { settings: { policyMode: 'audit' } } })).toMatchObject({
      ok: true,
      affected: ['n1', 'n2', 'n3'],
    });
    engine.regenerate();
    expectEqualsFullGeneration(engine);
    const n2 = { id: 'n2', hostname: 'n2.example.com', facts: { role: 'db' }, policyMode: 'enforce' };
    expect(engine.apply({ upsert: { nodes: [n2] } })).toMatchObject({ ok: true, affected: ['n2'] });
    engine.regenerate();
    expectEqualsFullGeneration(engine);
    expect(engine.bundle('n2')?.manifest?.policies[0]).toMatchObject({
      mode: 'enforce',
      directives: [{ id: 'd1', modeSource: 'node' }],
    });
  });

  it("keeps global parameters' inheritance modes with their parameters", () => {
    const engine = GenerationEngine.fromFleet(fleetOf(BASE));
    const upsertMode = engine.apply({ upsert: { settings: { parameterInheritModes: { nothing: 'mao' } } } });
    expect(upsertMode).toMatchObject({
      ok: false,
      issues: [
        {
          path: '$.upsert.settings.parameterInheritModes.nothing',
          message: 'nothing is not a global parameter',
        },
      ],
    });
    expect(engine.apply({ upsert: { settings: { parameterInheritModes: { dns: 'moa' } } } })).toMatchObject({
      ok: true,
    });
    expect(engine.apply({ delete: { parameters: ['dns'] } })).toMatchObject({
      ok: false,
      issues: [
        { path: '$.delete.parameters[0]', message: expect.stringContaining('has an inheritance mode') },
      ],
    });
    expect(
      engine.apply({ delete: { parameters: ['dns'] }, upsert: { settings: { parameterInheritModes: {} } } }),
    ).toMatchObject({ ok: true });
  });

  it('records a node whose generation throws as its failure, and generates the others', () => {
    // Validation refuses such a value: built past it, as a defect elsewhere could let one through.
    let deep: Json = 'x';
    for (let level = 0; level < 100_000; level++) deep = { a: deep };
    const base = fleetOf(BASE);
    const fleet: Fleet = {
      ...base,
      nodes: base.nodes.map((node) => (node.id === 'n2' ? { ...node, properties: { deep } } : node)),
    };
    const engine = GenerationEngine.fromFleet(fleet);
    expect(engine.regenerate().changed).toEqual(['n1', 'n2', 'n3']);
    expect(engine.result('n2')).toMatchObject({
      status: 'failed',
      errors: [
        { code: 'GENERATION_ERROR', message: 'generating the node failed: Maximum call stack size exceeded' },
      ],
    });
    expect(['n1', 'n3'].map((nodeId) => engine.result(nodeId)?.status)).toEqual(['ok', 'ok']);
    expect(engine.bundle('n2')).toEqual(generateNode(compileFleet(fleet), 'n2', { revision: 0 }));
  });

  it('fails a node whose files outgrow settings.maxBundleBytes, generates the others, and lets a raised limit through', () => {
    const base = fleetOf(BASE);
    // Within the value limit (64 KiB) one by one, beyond the bundle limit together.
    const big = Object.fromEntries(
      Array.from({ length: 3 }, (_, index) => [`blob${index}`, 'x'.repeat(30_000)]),
    );
    const fleet: Fleet = {
      ...base,
      settings: { ...base.settings, maxBundleBytes: 65_536 },
      nodes: base.nodes.map((node) => (node.id === 'n2' ? { ...node, properties: big } : node)),
    };
    const engine = GenerationEngine.fromFleet(fleet);
    expect(engine.regenerate().changed).toEqual(['n1', 'n2', 'n3']);
    expect(engine.result('n2')).toMatchObject({
      status: 'failed',
      hash: null,
      errors: [
        {
          code: 'BUNDLE_TOO_LARGE',
          message: expect.stringContaining('more than settings.maxBundleBytes (65536)'),
        },
      ],
    });
    expect(['n1', 'n3'].map((nodeId) => engine.result(nodeId)?.status)).toEqual(['ok', 'ok']);
    // The full generation says the same, file for file.
    expect(engine.bundle('n2')).toEqual(generateNode(compileFleet(fleet), 'n2', { revision: 0 }));
    expectEqualsFullGeneration(engine);
    expect(engine.apply({ upsert: { settings: { maxBundleBytes: 1024 * 1024 } } })).toMatchObject({
      ok: true,
    });
    engine.regenerate();
    expect(engine.result('n2')).toMatchObject({ status: 'ok' });
    expectEqualsFullGeneration(engine);
  });

  it('holds a change set to the value limit the configuration will have', () => {
    const engine = GenerationEngine.fromFleet(fleetOf(BASE));
    const big = { upsert: { parameters: { banner: 'x'.repeat(70_000) } } };
    expect(engine.apply(big)).toMatchObject({
      ok: false,
      issues: [
        {
          path: '$.upsert.parameters.banner',
          message: expect.stringContaining('settings.maxValueBytes (65536)'),
        },
      ],
    });
    expect(engine.apply({ upsert: { ...big.upsert, settings: { maxValueBytes: 131_072 } } })).toMatchObject({
      ok: true,
    });
  });

  it('coalesces a burst: each affected node once, at the newest revision', () => {
    const engine = GenerationEngine.fromFleet(fleetOf(BASE));
    engine.regenerate();
    for (const site of ['a', 'b', 'c']) {
      engine.apply({
        upsert: {
          nodes: [{ id: 'n1', hostname: 'n1.example.com', facts: { role: 'web' }, properties: { site } }],
        },
      });
    }
    engine.apply({ upsert: { parameters: { other: 1 } } });
    const run = engine.regenerate();
    expect(run.revision).toBe(4);
    expect(run.candidates).toBe(3);
    expectEqualsFullGeneration(engine);
  });
});
