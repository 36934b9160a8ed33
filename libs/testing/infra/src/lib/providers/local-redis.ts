import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManagedProcess } from '../managed-process';
import { freePort } from '../net';
import type { ProvidedService } from '../provided-service';
import { findExecutable } from '../system';
import { waitUntilReady } from '../wait-until-ready';

export function localRedisMissing(): string | undefined {
  return findExecutable('redis-server') ? undefined : 'redis-server is not on PATH';
}

/** Starts a private, memory-only redis-server on a free port. */
export async function startLocalRedis(
  options: { startTimeoutMs?: number } = {},
): Promise<ProvidedService<string>> {
  const workDir = mkdtempSync(join(tmpdir(), 'policygen-redis-'));
  const port = await freePort();
  const server = ManagedProcess.start({
    name: 'redis',
    command: 'redis-server',
    args: [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      workDir,
    ],
    logFile: join(workDir, 'redis.log'),
  });
  const stop = async (): Promise<void> => {
    await server.stop();
    rmSync(workDir, { recursive: true, force: true });
  };
  try {
    await waitUntilReady(server, () => answersPing(port), {
      what: `redis-server (local, port ${port})`,
      timeoutMs: options.startTimeoutMs ?? 30_000,
    });
  } catch (error) {
    await stop();
    throw error;
  }
  const url = `redis://127.0.0.1:${port}`;
  return { endpoint: url, description: `Redis: local redis-server started by the harness at ${url}`, stop };
}

function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    let reply = '';
    const finish = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => finish(false));
    socket.once('error', () => finish(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk.toString('utf8');
      if (reply.includes('\r\n')) finish(reply.startsWith('+PONG'));
    });
  });
}
