import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from './eventually';
import { ManagedProcess } from './managed-process';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('ManagedProcess', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'managed-process-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('captures output in its log and reports how it exited', async () => {
    const child = ManagedProcess.start({
      name: 'echo',
      command: 'bash',
      args: ['-c', 'echo first; echo second; exit 3'],
      logFile: join(dir, 'echo.log'),
    });
    expect(await child.exited).toEqual({ code: 3, signal: null });
    expect(child.running).toBe(false);
    expect(child.describeExit()).toBe('exited with code 3');
    expect(child.logTail(1)).toBe('second');
  });

  it('reports the exit of commands that end at once, before the guard waits for them', async () => {
    // Such a command used to be reaped before the guard's \`wait -n\`, which then never saw it end.
    const children = Array.from({ length: 12 }, (_, index) =>
      ManagedProcess.start({
        name: `quick-${index}`,
        command: 'bash',
        args: ['-c', `exit ${index % 5}`],
        logFile: join(dir, `quick-${index}.log`),
      }),
    );
    const exits = await Promise.all(children.map((child) => child.exited));
    expect(exits).toEqual(children.map((_, index) => ({ code: index % 5, signal: null })));
  });

  it('stops the command on request, escalating to SIGKILL when it ignores SIGTERM', async () => {
    const child = ManagedProcess.start({
      name: 'stubborn',
      command: 'bash',
      args: ['-c', "trap '' TERM; echo started; while true; do sleep 0.1; done"],
      logFile: join(dir, 'stubborn.log'),
    });
    await eventually(() => child.logTail().includes('started'), { what: 'the command to start' });
    await child.stop(1_000);
    expect(child.running).toBe(false);
  });

  it('stops the command when the process that started it dies', async () => {
    const pidFile = join(dir, 'sleeper.pid');
    // A throwaway parent starts a guarded `sleep`, reports its pid, then dies without cleaning up.
    const parentScript = `
      const { ManagedProcess } = require(${JSON.stringify(join(__dirname, 'managed-process'))});
      ManagedProcess.start({ name: 'sleeper', command: 'bash', args: ['-c', 'echo $$ > ${pidFile}; exec sleep 300'], logFile: ${JSON.stringify(join(dir, 'sleeper.log'))} });
      setTimeout(() => process.exit(0), 60_000);
    `;
    const parent = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', '-e', parentScript], {
      stdio: 'ignore',
      env: { ...process.env, TS_NODE_PROJECT: join(__dirname, '..', '..', 'tsconfig.spec.json') },
    });
    let sleeperPid = 0;
    await eventually(
      () => {
        try {
          sleeperPid = Number(readFileSync(pidFile, 'utf8'));
        } catch {
          return false;
        }
        return sleeperPid > 0;
      },
      { what: 'the guarded command to start', timeoutMs: 20_000 },
    );
    expect(alive(sleeperPid)).toBe(true);
    parent.kill('SIGKILL');
    await eventually(() => !alive(sleeperPid), {
      what: 'the orphaned command to be stopped',
      timeoutMs: 10_000,
    });
  });
});
