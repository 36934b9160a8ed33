import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildCli, removeDir, runCli, tempDir } from '../testing/cli-harness';

interface Report {
  readonly fleet: { readonly nodes: number; readonly failedNodes: number };
  readonly scenarios: readonly {
    readonly scenario: string;
    readonly affected: number;
    readonly recomputed: number;
    readonly changed: number;
    readonly naiveMs: number | null;
  }[];
}

/** A tiny run: that the benchmark works end to end, not how fast (no timing is asserted). */
describe('policygen bench', () => {
  let dir: string;

  beforeAll(() => buildCli());
  beforeEach(() => {
    dir = tempDir('bench');
  });
  afterEach(() => removeDir(dir));

  it('refuses a warm-up that is not a whole number of seconds up to an hour, naming the option (exit 2)', () => {
    for (const value of ['-3', 'abc', '1.5', '3601']) {
      const result = runCli(['bench', '--pipeline', '--warm-up', value]);
      expect(result.status).toBe(2);
      expect(result.stderr).toContain(`option '--warm-up <seconds>' argument '${value}' is invalid`);
      expect(result.stderr).toContain('from 0 to 3600');
    }
  });

  it('refuses a service node option that is not one flag, naming the option (exit 2)', () => {
    for (const value of ['perf', '--inspect x', '-e', '--require=./x.js extra']) {
      const result = runCli(['bench', '--pipeline', `--node-option=${value}`]);
      expect(result.status).toBe(2);
      expect(result.stderr).toContain(`option '--node-option <flag>' argument '${value}' is invalid`);
    }
  });

  it('refuses --compare-generator on a tree without a built generator, or with a lone generator, naming the option (exit 2)', () => {
    const unbuilt = runCli(['bench', '--pipeline', '--generators', '2', '--compare-generator', dir]);
    expect(unbuilt.status).toBe(2);
    expect(unbuilt.stderr).toContain(
      `--compare-generator: ${join(dir, 'dist', 'generator-service', 'main.js')} is missing`,
    );
    mkdirSync(join(dir, 'dist', 'generator-service'), { recursive: true });
    writeFileSync(join(dir, 'dist', 'generator-service', 'main.js'), '');
    const alone = runCli(['bench', '--pipeline', '--compare-generator', dir]);
    expect(alone.status).toBe(2);
    expect(alone.stderr).toContain('--compare-generator needs --generators 2 or more');
  });

  it('runs the scenarios on a small synthetic fleet and reports each in a table and a JSON file', () => {
    const out = join(dir, 'bench.json');
    const result = runCli([
      'bench',
      '--nodes',
      '1500',
      '--threads',
      '2',
      '--scenario',
      'full',
      '--scenario',
      'node-property',
      '--scenario',
      'node-facts',
      '--scenario',
      'directive-10pct',
      '--out',
      out,
    ]);
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(
      /^scenario +change sets +engine ms +affected +recomputed +changed +naive ms/m,
    );
    const report = JSON.parse(readFileSync(out, 'utf8')) as Report;
    expect(report.fleet).toMatchObject({ nodes: 1500, failedNodes: 0 });
    const byName = new Map(report.scenarios.map((scenario) => [scenario.scenario, scenario]));
    expect([...byName.keys()]).toEqual([
      'full',
      'full-parallel',
      'node-property',
      'node-property-parallel',
      'node-facts',
      'node-facts-parallel',
      'directive-10pct',
      'directive-10pct-parallel',
    ]);
    expect(byName.get('full')).toMatchObject({ recomputed: 1500, changed: 1500 });
    expect(byName.get('full-parallel')).toMatchObject({ recomputed: 1500, changed: 1500 });
    expect(byName.get('node-property')).toMatchObject({ affected: 1, recomputed: 1, changed: 1 });
    expect(byName.get('node-facts')).toMatchObject({ affected: 1, recomputed: 1, changed: 1 });
    // The same change scenarios on the pool, as the generator service would run them.
    expect(byName.get('node-property-parallel')).toMatchObject({ affected: 1, recomputed: 1, changed: 1 });
    expect(byName.get('directive-10pct-parallel')?.changed).toBe(byName.get('directive-10pct')?.changed);
    const tenPercent = byName.get('directive-10pct');
    expect(tenPercent?.affected).toBeGreaterThan(100);
    expect(tenPercent?.affected).toBeLessThan(200);
    expect(tenPercent?.naiveMs).toEqual(expect.any(Number));
  });

  it('exits 2 on an unknown scenario', () => {
    const result = runCli(['bench', '--nodes', '1000', '--scenario', 'nope', '--out', join(dir, 'b.json')]);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('unknown scenario nope');
  });
});
