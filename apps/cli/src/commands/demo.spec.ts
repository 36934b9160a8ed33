import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ANSI_ESCAPE, STACK_LINE, buildCli, removeDir, runCli, tempDir } from '../testing/cli-harness';

describe('policygen demo', () => {
  let dir: string;

  beforeAll(() => buildCli());
  beforeEach(() => {
    dir = tempDir('start');
  });
  afterEach(() => removeDir(dir));

  it('generates the demo fleet into --out, writes the fleet file, and says how to explore it', () => {
    const result = runCli(['demo', '--out', 'demo-out'], { cwd: dir });
    expect(result.stderr).not.toMatch(STACK_LINE);
    expect(result.stderr).not.toMatch(ANSI_ESCAPE);
    expect(result.status).toBe(0);

    const out = join(dir, 'demo-out');
    expect(existsSync(join(out, 'demo.fleet.json'))).toBe(true);
    const nodeDirectories = readdirSync(out).filter((entry) => entry !== 'demo.fleet.json');
    expect(nodeDirectories).toHaveLength(298); // 300 nodes, 2 ignored
    expect(result.stdout).toMatch(/298 ok, 0 failed, 2 ignored/);

    const explain = /npx policygen (explain --fleet \S+ --node \S+)/.exec(result.stdout);
    const graph = /npx policygen (graph --fleet \S+ --node \S+)/.exec(result.stdout);
    expect(explain).not.toBeNull();
    expect(graph).not.toBeNull();
    for (const suggestion of [explain?.[1], graph?.[1]]) {
      const suggested = runCli((suggestion ?? '').split(' '), { cwd: dir });
      expect(suggested.stderr).toBe('');
      expect(suggested.status).toBe(0);
    }
    const validate = runCli(['validate', '--fleet', join(out, 'demo.fleet.json')]);
    expect(validate.status).toBe(0);
    expect(validate.stdout).toMatch(/^valid: 300 nodes, 2 relays/);

    // Every demo tree is valid CFEngine for the real cf-promises (never skipped: a missing binary fails).
    const rejected = nodeDirectories.flatMap((node) => {
      const check = spawnSync(
        'cf-promises',
        [
          '--full-check',
          '-w',
          join(dir, 'cf-work'),
          '-f',
          join(out, node, 'rules/cfengine-community/promises.cf'),
        ],
        {
          encoding: 'utf8',
        },
      );
      if (check.error)
        throw new Error(
          `cf-promises could not run (install Debian package cfengine3): ${check.error.message}`,
        );
      const output = `${check.stdout}${check.stderr}`;
      return check.status === 0 && !/error:/.test(output) ? [] : [`${node}: ${output}`];
    });
    expect(rejected).toEqual([]);
  });
});
