import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildCli, listFiles, removeDir, runCli, tempDir, writeJson } from '../testing/cli-harness';
import { okFleet } from '../testing/fleets';

interface ChangeReport {
  readonly line: number;
  readonly revision: number;
  readonly affected: number;
  readonly recomputed: number;
  readonly changed: number;
  readonly removed: number;
  readonly engineMs: number;
}

function writeLines(file: string, values: readonly unknown[]): string {
  writeFileSync(file, values.map((value) => JSON.stringify(value)).join('\n') + '\n');
  return file;
}

/** Every file of every node tree, but the generation timestamp (and its digest in the manifest). */
function trees(out: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (const path of listFiles(out)) {
    if (path.endsWith('rudder-promises-generated')) continue;
    const content = readFileSync(join(out, path), 'utf8');
    if (!path.endsWith('policy-manifest.json')) {
      files[path] = content;
      continue;
    }
    const manifest = JSON.parse(content) as { files: { path: string }[] };
    manifest.files = manifest.files.filter((file) => !file.path.endsWith('rudder-promises-generated'));
    files[path] = JSON.stringify(manifest);
  }
  return files;
}

const node = (id: string, properties: Record<string, unknown> = {}) => ({
  id,
  hostname: `${id}.example.com`,
  policyServer: 'root',
  facts: { os: { name: 'Debian', version: '12' } },
  properties,
});

describe('policygen generate --changes', () => {
  let dir: string;

  beforeAll(() => buildCli());
  beforeEach(() => {
    dir = tempDir('changes');
  });
  afterEach(() => removeDir(dir));

  it('applies each change set incrementally and writes what a full generation of the result writes', () => {
    const fleet = writeJson(join(dir, 'ok.fleet.json'), okFleet());
    const changes = writeLines(join(dir, 'changes.jsonl'), [
      { upsert: { nodes: [node('n1', { team: 'web' })] } },
      { upsert: { parameters: { greeting: 'bonjour' } } },
      { upsert: { nodes: [node('n4')] }, delete: { nodes: ['n2'] } },
      {},
    ]);
    const out = join(dir, 'incremental');
    // A tree from an earlier run for n2, which the change sets delete.
    expect(runCli(['generate', '--fleet', fleet, '--out', out]).status).toBe(0);
    const result = runCli(['generate', '--fleet', fleet, '--changes', changes, '--out', out, '--json']);
    expect(result.status).toBe(0);
    const summary = JSON.parse(result.stdout) as { revision: number; changes: ChangeReport[] };
    expect(summary.revision).toBe(4);
    expect(summary.changes.map(({ engineMs: _engineMs, ...report }) => report)).toEqual([
      { line: 1, revision: 1, affected: 1, recomputed: 1, changed: 1, removed: 0 },
      // The parameter is a property level of every node and a value of `greet` (n3 is ignored).
      { line: 2, revision: 2, affected: 2, recomputed: 2, changed: 2, removed: 0 },
      { line: 3, revision: 3, affected: 1, recomputed: 1, changed: 1, removed: 1 },
      { line: 4, revision: 4, affected: 0, recomputed: 0, changed: 0, removed: 0 },
    ]);
    expect(result.stderr).toMatch(
      /^applied 4 change sets: 4 nodes affected, 4 changed, [\d.]+ ms engine time$/m,
    );
    expect(readdirSync(out).sort()).toEqual(['n1', 'n4']);

    // The same final configuration, generated from scratch at the same revision.
    const final = okFleet();
    final.parameters = { greeting: 'bonjour' };
    final.nodes = [node('n1', { team: 'web' }), final.nodes[2] as (typeof final.nodes)[number], node('n4')];
    const full = join(dir, 'full');
    const finalFleet = writeJson(join(dir, 'final.fleet.json'), final);
    expect(runCli(['generate', '--fleet', finalFleet, '--out', full, '--revision', '4']).status).toBe(0);
    expect(trees(out)).toEqual(trees(full));
  });

  it('exits 2 on a change set that does not apply, naming its line and every issue, writing nothing', () => {
    const fleet = writeJson(join(dir, 'ok.fleet.json'), okFleet());
    const changes = writeLines(join(dir, 'changes.jsonl'), [
      { upsert: { nodes: [node('n1', { team: 'web' })] } },
      {
        upsert: { rules: [{ id: 'r2', name: 'R2', directives: ['nope'] }] },
        delete: { directives: ['greet'] },
      },
    ]);
    const out = join(dir, 'out');
    const result = runCli(['generate', '--fleet', fleet, '--changes', changes, '--out', out]);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('$.upsert.rules[0].directives[0]: unknown directive nope');
    expect(result.stderr).toContain(
      '$.delete.directives[0]: rules[r-all].directives[0]: unknown directive greet',
    );
    expect(result.stderr).toMatch(/changes\.jsonl:2 is not a valid change set \(\d+ issues\)/);
    expect(listFiles(dir).some((path) => path.startsWith('out/'))).toBe(false);
  });

  it('exits 2 on a line that is not JSON', () => {
    const fleet = writeJson(join(dir, 'ok.fleet.json'), okFleet());
    const changes = join(dir, 'changes.jsonl');
    writeFileSync(changes, '{}\n{"upsert": \n');
    const result = runCli(['generate', '--fleet', fleet, '--changes', changes, '--out', join(dir, 'out')]);
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/changes\.jsonl:2: not valid JSON/);
  });
});
