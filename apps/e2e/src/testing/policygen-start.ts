import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, freePort, ManagedProcess, workspaceRoot } from '@policygen/testing-infra';

/** `policygen start` as its user runs it: the built CLI, one process, read from what it prints. */
export interface StartedPolicygen {
  readonly url: string;
  readonly adminToken: string;
  /** The example node's token, as printed (`Node token: …`). */
  readonly nodeToken: string;
  readonly process: ManagedProcess;
  /** Everything it printed so far. */
  output(): string;
  /** SIGTERM and wait; the working directory (not `--data`) is removed. */
  stop(): Promise<void>;
}

export interface StartOptions {
  readonly adminToken: string;
  /** `--data DIR`; without it, `policygen start` keeps its files in a temporary directory. */
  readonly dataDir?: string;
  readonly port?: number;
  readonly timeoutMs?: number;
}

export async function startPolicygen(options: StartOptions): Promise<StartedPolicygen> {
  const workDir = mkdtempSync(join(tmpdir(), 'policygen-e2e-start-'));
  const logFile = join(workDir, 'start.log');
  const port = options.port ?? (await freePort());
  const started = ManagedProcess.start({
    name: 'policygen start',
    command: process.execPath,
    args: [
      join(workspaceRoot(), 'dist', 'cli', 'policygen.js'),
      'start',
      '--port',
      String(port),
      ...(options.dataDir === undefined ? [] : ['--data', options.dataDir]),
    ],
    logFile,
    env: { ...process.env, TMPDIR: workDir, POLICYGEN_ADMIN_TOKEN: options.adminToken, NO_COLOR: '1' },
  });
  const output = (): string => readFileSync(logFile, 'utf8');
  await eventually(
    () => {
      if (!started.running) throw new Error(`policygen start ${started.describeExit()}:\n${output()}`);
      return output().includes('Ctrl-C stops everything.');
    },
    { what: 'policygen start to be ready', timeoutMs: options.timeoutMs ?? 180_000, intervalMs: 200 },
  );
  const nodeToken = /^Node token: (\S+)$/m.exec(output())?.[1];
  if (nodeToken === undefined) throw new Error(`policygen start printed no node token:\n${output()}`);
  return {
    url: `http://127.0.0.1:${port}`,
    adminToken: options.adminToken,
    nodeToken,
    process: started,
    output,
    async stop() {
      await started.stop();
      rmSync(workDir, { recursive: true, force: true });
    },
  };
}
