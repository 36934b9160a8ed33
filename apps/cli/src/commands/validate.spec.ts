import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { loadFleet } from '@policygen/engine';
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
import { invalidFleet, okFleet } from '../testing/fleets';

describe('policygen validate', () => {
  let dir: string;

  beforeAll(() => buildCli());
  beforeEach(() => {
    dir = tempDir('validate');
  });
  afterEach(() => removeDir(dir));

  it('exits 0 and says what the fleet holds when it is valid', () => {
    const fleet = writeJson(join(dir, 'ok.fleet.json'), okFleet());
    const result = runCli(['validate', '--fleet', fleet]);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^valid: 3 nodes, /);
  });

  it.each(['yaml', 'yml'])('reads YAML from a .%s file', (extension) => {
    const fleet = join(dir, `ok.fleet.${extension}`);
    writeFileSync(fleet, stringify(okFleet()));
    const result = runCli(['validate', '-f', fleet]);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^valid: 3 nodes/);
  });

  it('exits 2 and prints every issue with its JSON path, one per line, on stderr', () => {
    const fleet = writeJson(join(dir, 'invalid.fleet.json'), invalidFleet());
    const result = runCli(['validate', '--fleet', fleet]);
    expect(result.status).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).not.toMatch(STACK_LINE);
    expect(result.stderr).not.toMatch(ANSI_ESCAPE);

    const expected = loadFleet(readFileSync(fleet, 'utf8'), 'json');
    if (expected.ok) throw new Error('the invalid fleet validates');
    const lines = result.stderr.trimEnd().split('\n');
    for (const issue of expected.issues) expect(lines).toContain(`${issue.path}: ${issue.message}`);
    const paths = lines.map((line) => line.split(': ')[0]);
    expect(paths).toContain('$.directives[0].priority');
    expect(paths).toContain('$.rules[0].directives[0]');
    expect(paths.some((path) => path?.startsWith('$.nodes[0]'))).toBe(true); // the unknown field
    expect(paths.some((path) => path?.startsWith('$.nodes[2]'))).toBe(true); // the duplicate id
    expect(lines[lines.length - 1]).toMatch(
      /^policygen: .*invalid\.fleet\.json is not a valid fleet \(\d+ issues\)$/,
    );
  });

  it('reports a syntax error as an issue, exit 2', () => {
    const json = join(dir, 'broken.json');
    writeFileSync(json, '{"nodes": [');
    const yaml = join(dir, 'broken.yaml');
    writeFileSync(yaml, 'nodes:\n  - id: [\n');
    for (const fleet of [json, yaml]) {
      const result = runCli(['validate', '--fleet', fleet]);
      expect(result.status).toBe(2);
      expect(result.stderr).toMatch(/^\$\S*: /m);
      expect(result.stderr).not.toMatch(STACK_LINE);
    }
  });

  it('exits 2 with one line when the file cannot be read or has no fleet extension', () => {
    const missing = runCli(['validate', '--fleet', join(dir, 'missing.json')]);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toBe(
      `policygen: cannot read fleet file ${join(dir, 'missing.json')}: no such file or directory\n`,
    );

    mkdirSync(join(dir, 'a-dir.json'));
    const directory = runCli(['validate', '--fleet', join(dir, 'a-dir.json')]);
    expect(directory.status).toBe(2);
    expect(directory.stderr).toBe(
      `policygen: cannot read fleet file ${join(dir, 'a-dir.json')}: is a directory\n`,
    );

    writeFileSync(join(dir, 'fleet.txt'), '{}');
    const extension = runCli(['validate', '--fleet', join(dir, 'fleet.txt')]);
    expect(extension.status).toBe(2);
    expect(extension.stderr).toMatch(
      /^policygen: .*fleet\.txt: a fleet file must end in \.json, \.yaml or \.yml\n$/,
    );
  });

  it('exits 2 when --fleet is missing', () => {
    const result = runCli(['validate']);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('--fleet');
    expect(result.stderr).not.toMatch(STACK_LINE);
  });

  it.each(['dns-override.fleet.json', 'seed-ordering.fleet.json'])(
    'accepts the shared example %s',
    (example) => {
      const result = runCli(['validate', '--fleet', join(EXAMPLES, example)]);
      expect(result.stderr).toBe('');
      expect(result.status).toBe(0);
    },
  );
});
