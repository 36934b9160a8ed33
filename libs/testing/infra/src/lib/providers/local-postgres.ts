import { randomBytes } from 'node:crypto';
import { chownSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { canConnect, freePort } from '../net';
import type { ProvidedService } from '../provided-service';
import { InfrastructureError } from '../provided-service';
import { findExecutable, run } from '../system';
import type { RestartableServer } from '../restartable-server';
import { startServer } from '../restartable-server';

const SHARED_HOST = '127.0.0.1';
const SHARED_PORT = 5432;

/** Whether the machine's own PostgreSQL answers on 127.0.0.1:5432. */
export function sharedPostgresAnswers(): Promise<boolean> {
  return canConnect(SHARED_HOST, SHARED_PORT);
}

function postgresBinDirs(): string[] {
  try {
    return readdirSync('/usr/lib/postgresql')
      .sort()
      .reverse()
      .map((version) => join('/usr/lib/postgresql', version, 'bin'));
  } catch {
    return [];
  }
}

export function privatePostgresMissing(): string | undefined {
  return findExecutable('initdb', postgresBinDirs()) && findExecutable('postgres', postgresBinDirs())
    ? undefined
    : 'PostgreSQL server binaries (initdb, postgres) are not installed';
}

/**
 * A fresh database on the machine's PostgreSQL (trust authentication on 127.0.0.1:5432), dropped
 * again by stop(), so that runs never see each other's tables.
 */
export async function createDatabaseOnSharedPostgres(): Promise<ProvidedService<string>> {
  const user = process.env['PGUSER'] ?? 'postgres';
  const maintenanceUrl = await firstReachable(
    ['postgres', 'test', user].map((db) => `postgres://${user}@${SHARED_HOST}:${SHARED_PORT}/${db}`),
  );
  const database = `policygen_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  await withClient(maintenanceUrl, (client) => client.query(`CREATE DATABASE ${database}`));
  const url = `postgres://${user}@${SHARED_HOST}:${SHARED_PORT}/${database}`;
  return {
    endpoint: url,
    description: `Postgres: fresh database ${database} on the local PostgreSQL at ${SHARED_HOST}:${SHARED_PORT}`,
    stop: async () => {
      await withClient(maintenanceUrl, (client) =>
        client.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`),
      );
    },
  };
}

/**
 * A private PostgreSQL cluster (initdb in a temporary folder, on a free port), which tests may stop,
 * kill and start again on its data. initdb refuses to run as root, so root runs it as the postgres
 * user. `durable` keeps Postgres's fsyncs (a crash then loses no committed transaction).
 */
export async function startRestartablePostgres(
  options: { readonly startTimeoutMs?: number; readonly durable?: boolean } = {},
): Promise<{ readonly url: string; readonly server: RestartableServer }> {
  const dirs = postgresBinDirs();
  const initdb = findExecutable('initdb', dirs);
  const postgres = findExecutable('postgres', dirs);
  if (!initdb || !postgres)
    throw new InfrastructureError(privatePostgresMissing() ?? 'no PostgreSQL binaries');
  const asRoot = userInfo().uid === 0;
  const runAs = (command: string, args: string[]): [string, string[]] =>
    asRoot ? ['runuser', ['-u', 'postgres', '--', command, ...args]] : [command, args];

  const workDir = mkdtempSync(join(tmpdir(), 'policygen-postgres-'));
  const dataDir = join(workDir, 'data');
  if (asRoot) {
    const uid = Number(await run('id', ['-u', 'postgres'], { timeoutMs: 5_000 }));
    const gid = Number(await run('id', ['-g', 'postgres'], { timeoutMs: 5_000 }));
    chownSync(workDir, uid, gid);
  }
  const [initCommand, initArgs] = runAs(initdb, [
    '-D',
    dataDir,
    '-U',
    'postgres',
    '--auth=trust',
    '-E',
    'UTF8',
  ]);
  await run(initCommand, initArgs, { timeoutMs: 120_000 });

  const port = await freePort();
  const [command, args] = runAs(postgres, [
    '-D',
    dataDir,
    '-p',
    String(port),
    '-k',
    workDir,
    '-c',
    'listen_addresses=127.0.0.1',
    ...(options.durable
      ? []
      : ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']),
  ]);
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const server = await startServer({
    what: `PostgreSQL (private cluster in ${dataDir}, port ${port})`,
    workDir,
    startTimeoutMs: options.startTimeoutMs ?? 60_000,
    restartGraceMs: 20_000,
    probe: () => withClient(url, async () => true),
    process: { name: 'postgres', command, args, logFile: join(workDir, 'postgres.log') },
  });
  return { url, server };
}

/**
 * A private PostgreSQL cluster (initdb in a temporary folder, on a free port) for machines whose
 * own server does not answer.
 */
export async function startPrivatePostgres(
  options: { startTimeoutMs?: number } = {},
): Promise<ProvidedService<string>> {
  const { url, server } = await startRestartablePostgres(options);
  return {
    endpoint: url,
    description: `Postgres: private cluster started by the harness at ${url}`,
    stop: () => server.close(),
  };
}

async function firstReachable(urls: readonly string[]): Promise<string> {
  const failures: string[] = [];
  for (const url of urls) {
    try {
      await withClient(url, async () => undefined);
      return url;
    } catch (error) {
      failures.push(`${url}: ${(error as Error).message}`);
    }
  }
  throw new InfrastructureError(
    `PostgreSQL on ${SHARED_HOST}:${SHARED_PORT} refused every login:\n${failures.join('\n')}`,
  );
}

async function withClient<T>(url: string, work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}
