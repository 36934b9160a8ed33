import { join } from 'node:path';
import { ROOT, STACK_LINE, buildCli, runCli } from './testing/cli-harness';

describe('the policygen command line', () => {
  beforeAll(() => buildCli());

  it('prints its help with every command, exit 0', () => {
    const result = runCli(['--help']);
    expect(result.status).toBe(0);
    for (const command of ['validate', 'generate', 'explain', 'graph', 'demo', 'start']) {
      expect(result.stdout).toMatch(new RegExp(`^\\s+${command}\\b`, 'm'));
    }
  });

  it('prints the help of a command', () => {
    const result = runCli(['generate', '--help']);
    expect(result.status).toBe(0);
    for (const option of ['--fleet', '--out', '--node', '--ordering', '--revision', '--json']) {
      expect(result.stdout).toContain(option);
    }
  });

  it('prints its version', () => {
    const result = runCli(['--version']);
    expect(result.status).toBe(0);
    expect(result.stdout).toBe('0.1.0\n');
  });

  it('exits 2 on an unknown command or option, without a stack trace', () => {
    for (const args of [['frobnicate'], ['validate', '--fleet', 'x.json', '--frob'], []]) {
      const result = runCli(args);
      expect(result.status).toBe(2);
      expect(result.stderr).not.toBe('');
      expect(result.stderr).not.toMatch(STACK_LINE);
    }
  });

  it('runs through the workspace bin shim (npx policygen)', () => {
    const result = runCli(['--help'], { script: join(ROOT, 'apps', 'cli', 'bin', 'policygen.js') });
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^Usage: policygen /);
  });
});
