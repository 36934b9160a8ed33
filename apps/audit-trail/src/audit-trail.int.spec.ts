import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'pg';
import type { Connection, SdkLogger } from '@policygen/sdk';
import { TOPICS } from '@policygen/sdk';
import { eventually, freePort, getTestInfrastructure, workspaceRoot } from '@policygen/testing-infra';
import type { AuditTrail } from './audit-trail';
import { startAuditTrail } from './audit-trail';

const quiet: SdkLogger = { info: () => undefined, warn: () => undefined, error: () => undefined };
const NODE = 'web-par-001';
const START_TOKEN = 'audit-trail-test-admin-token-0123456789';
type Entity = Record<string, unknown>;

/**
 * The audit trail against a running Policygen, the same code whatever the source of events: the
 * changes are made through the config API, the rows are read from Postgres.
 */
async function recordsAChangeAndAFailure(
  configUrl: string,
  adminToken: string,
  connection: Connection,
): Promise<void> {
  const api = async (method: string, path: string, body?: unknown): Promise<Entity> => {
    const response = await fetch(`${configUrl}${path}`, {
      method,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as Entity;
  };
  const schema = `audit_${randomBytes(5).toString('hex')}`;
  const databaseUrl = getTestInfrastructure().databaseUrl;
  let trail: AuditTrail | undefined;
  try {
    trail = await startAuditTrail({ connection, databaseUrl, schema, groupId: schema, logger: quiet });
    const { store, consumer } = trail;
    await consumer.caughtUp(TOPICS.distributionEvents);

    const node = await api('GET', `/api/v1/nodes/${NODE}`);
    await api('PUT', `/api/v1/nodes/${NODE}`, {
      ...node,
      properties: { ...(node['properties'] as object), audited: true },
    });
    const changed = (await api('GET', '/api/v1/revision'))['revision'] as number;
    await eventually(async () => (await store.deliveredRevisions(NODE))['root'] === changed, {
      what: `the delivery of ${NODE} at revision ${changed} recorded`,
      timeoutMs: 60_000,
    });
    expect((await store.latestResult(NODE))?.revision).toBe(changed);

    // A directive that requires one its nodes do not have: they fail, and the trail says which, and why.
    const directive = await api('GET', '/api/v1/directives/cron-db-backup');
    await api('PUT', '/api/v1/directives/cron-db-backup', {
      ...directive,
      require: [...((directive['require'] as string[]) ?? []), 'dir-app'],
    });
    await eventually(async () => (await store.failingNow()).length > 0, {
      what: 'the failing nodes recorded',
      timeoutMs: 60_000,
    });
    const failing = await store.failingNow();
    expect(failing.every((failure) => failure.codes.includes('MISSING_DEPENDENCY'))).toBe(true);
    await api('PUT', '/api/v1/directives/cron-db-backup', directive);
    await eventually(async () => (await store.failingNow()).length === 0, {
      what: 'the failures to end',
      timeoutMs: 60_000,
    });
    // The history stays.
    const pool = new Pool({ connectionString: databaseUrl });
    const history = await pool.query(`SELECT count(*)::int AS count FROM ${schema}.failures`);
    await pool.end();
    expect(history.rows[0].count).toBeGreaterThanOrEqual(failing.length);
    expect(consumer.stats().deadLettered).toBe(0);
  } finally {
    await trail?.stop();
    const pool = new Pool({ connectionString: databaseUrl });
    await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await pool.end();
  }
}

describe('the audit trail, end to end', () => {
  it('records against policygen start, with the same code', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'policygen-audit-start-'));
    const logFile = join(directory, 'start.log');
    const port = await freePort();
    const log = openSync(logFile, 'w');
    let started: ChildProcess | undefined;
    try {
      started = spawn(
        process.execPath,
        [join(workspaceRoot(), 'dist', 'cli', 'policygen.js'), 'start', '--port', String(port)],
        {
          env: { ...process.env, TMPDIR: directory, POLICYGEN_ADMIN_TOKEN: START_TOKEN },
          stdio: ['ignore', log, log],
        },
      );
      closeSync(log);
      let exited = false;
      started.once('exit', () => (exited = true));
      await eventually(
        () => {
          const printed = readFileSync(logFile, 'utf8');
          if (exited) throw new Error(`policygen start ended:\n${printed}`);
          return printed.includes('Ctrl-C stops everything.');
        },
        { what: 'policygen start to be ready', timeoutMs: 180_000, intervalMs: 200 },
      );
      const url = `http://127.0.0.1:${port}`;
      await expect(
        recordsAChangeAndAFailure(url, START_TOKEN, { stream: { url, token: START_TOKEN } }),
      ).resolves.toBeUndefined();
    } finally {
      started?.kill('SIGKILL');
      rmSync(directory, { recursive: true, force: true });
    }
  }, 300_000);
});
