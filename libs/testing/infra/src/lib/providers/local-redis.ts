import { mkdtempSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../net';
import type { ProvidedService } from '../provided-service';
import { findExecutable } from '../system';
import type { RestartableServer } from '../restartable-server';
import { startServer } from '../restartable-server';

export function localRedisMissing(): string | undefined {
  return findExecutable('redis-server') ? undefined : 'redis-server is not on PATH';
}

/** A private, memory-only redis-server on a free port, which tests may restart (it comes back empty). */
export async function startRestartableRedis(
  options: { startTimeoutMs?: number } = {},
): Promise<{ readonly url: string; readonly server: RestartableServer }> {
  const workDir = mkdtempSync(join(tmpdir(), 'policygen-redis-'));
  const port = await freePort();
  const server = await startServer({
    what: `redis-server (local, port ${port})`,
    workDir,
    startTimeoutMs: options.startTimeoutMs ?? 30_000,
    probe: () => answersPing(port),
    process: {
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
    },
  });
  return { url: `redis://127.0.0.1:${port}`, server };
}

/** Starts a private, memory-only redis-server on a free port. */
export async function startLocalRedis(
  options: { startTimeoutMs?: number } = {},
): Promise<ProvidedService<string>> {
  const { url, server } = await startRestartableRedis(options);
  return {
    endpoint: url,
    description: `Redis: local redis-server started by the harness at ${url}`,
    stop: () => server.close(),
  };
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
