import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  ANSI_ESCAPE,
  EXAMPLES,
  STACK_LINE,
  buildCli,
  listFiles,
  removeDir,
  runCli,
  tempDir,
  writeJson,
} from '../testing/cli-harness';
import { failingFleet, invalidFleet, okFleet } from '../testing/fleets';

interface Manifest {
  readonly nodeId: string;
  readonly configRevision: number;
  readonly status: string;
  readonly errors: readonly { readonly code: string; readonly message: string }[];
  readonly ordering: string;
  readonly policies: readonly {
    readonly id: string;
    readonly directives: readonly { readonly id: string }[];
  }[];
  readonly files: readonly { readonly path: string; readonly sha256: string }[];
  readonly hash: string | null;
}

const PROMISES = 'rules/cfengine-community/promises.cf';
const SUMMARY = /^generated (\d+) nodes? \((\d+) failed, (\d+) ignored\) into (.+) in \d+\.\d\d s$/m;

function readManifest(out: string, nodeId: string): Manifest {
  return JSON.parse(readFileSync(join(out, nodeId, 'policy-manifest.json'), 'utf8')) as Manifest;
}

describe('policygen generate', () => {
  let dir: string;
  let out: string;

  beforeAll(() => buildCli());
  beforeEach(() => {
    dir = tempDir('generate');
    out = join(dir, 'out');
  });
  afterEach(() => removeDir(dir));

  it('writes every node bundle, nothing for an ignored node, and exits 0', () => {
    const fleet = writeJson(join(dir, 'ok.fleet.json'), okFleet());
    const result = runCli(['generate', '--fleet', fleet, '--out', out]);
    expect(result.status).toBe(0);
    expect(result.stdout).toBe('');
    // Not a terminal: no progress bar, only the summary line.
    expect(result.stderr.split('\n')).toEqual([expect.stringMatching(SUMMARY), '']);
    expect(result.stderr).toMatch(/^generated 3 nodes \(0 failed, 1 ignored\) into .*out\/ in /);
    expect(result.stderr).not.toMatch(ANSI_ESCAPE);
    expect(result.stderr).not.toContain('\r');

    expect(readdirSync(out).sort()).toEqual(['n1', 'n2']);
    for (const nodeId of ['n1', 'n2']) {
      const manifest = readManifest(out, nodeId);
      expect(manifest).toMatchObject({ nodeId, status: 'ok', errors: [], configRevision: 0 });
      expect(manifest.hash).toMatch(/^sha256:[0-9a-f]{64}$/);
      const files = listFiles(join(out, nodeId));
      expect(files).toContain('policy-manifest.json');
      expect(files).toContain(PROMISES);
      for (const file of manifest.files) {
        const content = readFileSync(join(out, nodeId, file.path));
        expect({ path: file.path, sha256: createHash('sha256').update(content).digest('hex') }).toEqual(file);
      }
    }
  });

  it('replaces the previous tree of a node that succeeds', () => {
    const fleet = writeJson(join(dir, 'ok.fleet.json'), okFleet());
    mkdirSync(join(out, 'n1', 'rules'), { recursive: true });
    writeFileSync(join(out, 'n1', 'rules', 'stale.cf'), 'stale');
    expect(runCli(['generate', '--fleet', fleet, '--out', out]).status).toBe(0);
    expect(existsSync(join(out, 'n1', 'rules', 'stale.cf'))).toBe(false);
    expect(existsSync(join(out, 'n1', PROMISES))).toBe(true);
    expect(readdirSync(out).filter((entry) => entry.includes('.tmp-'))).toEqual([]);
  });

  it('exits 1 when a node fails; the failed node keeps its last tree and gets a new manifest', () => {
    const fleet = writeJson(join(dir, 'failing.fleet.json'), failingFleet());
    mkdirSync(join(out, 'n2', 'rules', 'cfengine-community'), { recursive: true });
    writeFileSync(join(out, 'n2', 'rules', 'cfengine-community', 'promises.cf'), 'last good tree');
    writeFileSync(join(out, 'n2', 'policy-manifest.json'), '{"status": "old"}');

    const result = runCli(['generate', '--fleet', fleet, '--out', out]);
    expect(result.status).toBe(1);
    expect(result.stderr).not.toMatch(STACK_LINE);
    expect(result.stderr).toContain('n2');
    expect(result.stderr).toContain('MISSING_DEPENDENCY');
    expect(result.stderr.trimEnd().split('\n').pop()).toMatch(/^generated 2 nodes \(1 failed, 0 ignored\)/);

    expect(readFileSync(join(out, 'n2', PROMISES), 'utf8')).toBe('last good tree');
    const failed = readManifest(out, 'n2');
    expect(failed.status).toBe('failed');
    expect(failed.errors.map((error) => error.code)).toEqual(['MISSING_DEPENDENCY']);
    expect(failed.errors[0]?.message).toBe('Could not find dependency Directive[b] for Directive[a]');

    expect(readManifest(out, 'n1').status).toBe('ok');
    expect(existsSync(join(out, 'n1', PROMISES))).toBe(true);
  });

  it('writes only the manifest of a failed node that had no previous tree', () => {
    const fleet = writeJson(join(dir, 'failing.fleet.json'), failingFleet());
    expect(runCli(['generate', '--fleet', fleet, '--out', out]).status).toBe(1);
    expect(listFiles(join(out, 'n2'))).toEqual(['policy-manifest.json']);
  });

  it('prints a machine-readable summary on stdout with --json', () => {
    const fleet = writeJson(join(dir, 'failing.fleet.json'), failingFleet());
    const result = runCli(['generate', '--fleet', fleet, '--out', out, '--json']);
    expect(result.status).toBe(1);
    const summary = JSON.parse(result.stdout) as Record<string, unknown>;
    expect(Object.keys(summary).sort()).toEqual(
      ['durationMs', 'failed', 'failures', 'hashes', 'ignored', 'nodes', 'ok', 'out', 'revision'].sort(),
    );
    expect(summary).toMatchObject({ nodes: 2, ok: 1, failed: 1, ignored: 0, out });
    expect(summary['durationMs']).toEqual(expect.any(Number));
    expect(summary['failures']).toEqual([
      {
        nodeId: 'n2',
        errors: [expect.objectContaining({ code: 'MISSING_DEPENDENCY', message: expect.any(String) })],
      },
    ]);
    expect(summary['hashes']).toEqual({ n1: readManifest(out, 'n1').hash });
    expect(result.stderr).toMatch(SUMMARY);
  });

  it('gives the same hashes on every run (the generation time is not part of them)', () => {
    const fleet = writeJson(join(dir, 'ok.fleet.json'), okFleet());
    const first = JSON.parse(runCli(['generate', '--fleet', fleet, '--out', out, '--json']).stdout) as {
      hashes: Record<string, string>;
    };
    const second = JSON.parse(
      runCli(['generate', '--fleet', fleet, '--out', join(dir, 'again'), '--json']).stdout,
    ) as {
      hashes: Record<string, string>;
    };
    expect(Object.keys(first.hashes).sort()).toEqual(['n1', 'n2']);
    expect(second.hashes).toEqual(first.hashes);
  });

  it('writes the --generated-at time, so that two runs give the same bytes', () => {
    const fleet = writeJson(join(dir, 'ok.fleet.json'), okFleet());
    const stamp = '1795000000123';
    for (const target of [out, join(dir, 'again')])
      expect(runCli(['generate', '--fleet', fleet, '--out', target, '--generated-at', stamp]).status).toBe(0);
    const generated = 'rules/cfengine-community/rudder-promises-generated';
    expect(readFileSync(join(out, 'n1', generated), 'utf8').trim()).toBe(stamp);
    for (const file of [generated, 'policy-manifest.json'])
      expect(readFileSync(join(dir, 'again', 'n1', file), 'utf8')).toBe(
        readFileSync(join(out, 'n1', file), 'utf8'),
      );
    const refused = runCli(['generate', '--fleet', fleet, '--out', out, '--generated-at', 'yesterday']);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toMatch(/--generated-at/);
  });

  it('generates only the --node ones, and passes --ordering and --revision to the manifests', () => {
    const fleet = writeJson(join(dir, 'ok.fleet.json'), okFleet());
    const result = runCli([
      'generate',
      '--fleet',
      fleet,
      '--out',
      out,
      '--node',
      'n2',
      '--ordering',
      'title-hash',
      '--revision',
      '42',
    ]);
    expect(result.status).toBe(0);
    expect(result.stderr).toMatch(/^generated 1 node \(0 failed, 0 ignored\)/);
    expect(readdirSync(out)).toEqual(['n2']);
    expect(readManifest(out, 'n2')).toMatchObject({ ordering: 'title-hash', configRevision: 42 });
  });

  it('exits 2 and writes nothing for an unknown --node', () => {
    const fleet = writeJson(join(dir, 'ok.fleet.json'), okFleet());
    const result = runCli(['generate', '--fleet', fleet, '--out', out, '--node', 'n1', '--node', 'ghost']);
    expect(result.status).toBe(2);
    expect(result.stderr).toBe('policygen: unknown node: ghost (not in the fleet)\n');
    expect(existsSync(out)).toBe(false);
  });

  it.each([
    ['a bad --ordering', ['--ordering', 'sideways']],
    ['a bad --revision', ['--revision', 'latest']],
    ['a missing --out', null],
  ])('exits 2 on %s', (_label, extra) => {
    const fleet = writeJson(join(dir, 'ok.fleet.json'), okFleet());
    const args = extra
      ? ['generate', '--fleet', fleet, '--out', out, ...extra]
      : ['generate', '--fleet', fleet];
    const result = runCli(args);
    expect(result.status).toBe(2);
    expect(result.stderr).not.toMatch(STACK_LINE);
    expect(existsSync(out)).toBe(false);
  });

  it('exits 2 on an invalid or unreadable fleet, writing nothing', () => {
    const invalid = writeJson(join(dir, 'invalid.fleet.json'), invalidFleet());
    const result = runCli(['generate', '--fleet', invalid, '--out', out]);
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/^\$\.directives\[0\]\.priority: /m);
    expect(result.stderr).not.toMatch(STACK_LINE);
    expect(existsSync(out)).toBe(false);

    const missing = runCli(['generate', '--fleet', join(dir, 'missing.json'), '--out', out]);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/^policygen: cannot read fleet file /);
  });

  it('exits 2 when --out is a file', () => {
    const fleet = writeJson(join(dir, 'ok.fleet.json'), okFleet());
    writeFileSync(out, 'not a directory');
    const result = runCli(['generate', '--fleet', fleet, '--out', out]);
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/^policygen: --out .*: not a directory\n$/);
  });

  it("orders the seed's worked example as seed-ordering.expected.json says", () => {
    const expected = JSON.parse(readFileSync(join(EXAMPLES, 'seed-ordering.expected.json'), 'utf8')) as {
      nodeId: string;
      policies: { id: string; directives: string[] }[];
    };
    const result = runCli(['generate', '--fleet', join(EXAMPLES, 'seed-ordering.fleet.json'), '--out', out]);
    expect(result.status).toBe(0);
    const manifest = readManifest(out, expected.nodeId);
    expect(
      manifest.policies.map((policy) => ({ id: policy.id, directives: policy.directives.map((d) => d.id) })),
    ).toEqual(expected.policies);
  });
});
