import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'pg';
import { eventually, getTestInfrastructure, ManagedProcess, workspaceRoot } from '@policygen/testing-infra';
import type { Entity } from './testing/pipeline';
import { Pipeline } from './testing/pipeline';

/**
 * The audit-trail example (apps/audit-trail) as its user runs it: the built program, configured by
 * its environment, reading the events of the real pipeline on Kafka and writing to Postgres.
 */

const NODE = 'web-par-001';

describe('the audit-trail example against the services as processes', () => {
  it('records deliveries and failures, and the failures end', async () => {
    const infra = getTestInfrastructure();
    const pipeline = new Pipeline();
    const pool = new Pool({ connectionString: infra.databaseUrl });
    const schema = `audit_${pipeline.id}`;
    let trail: ManagedProcess | undefined;
    try {
      await pipeline.start();
      await pipeline.startGenerator();
      const distribution = await pipeline.startDistribution();
      await pipeline.startRelay('root', distribution.url);
      const imported = await pipeline.importDemoFleet();
      trail = ManagedProcess.start({
        name: 'audit-trail',
        command: process.execPath,
        args: [join(workspaceRoot(), 'dist', 'audit-trail', 'main.js')],
        logFile: join(mkdtempSync(join(tmpdir(), 'policygen-audit-')), 'audit-trail.log'),
        env: {
          ...process.env,
          POLICYGEN_KAFKA_BROKERS: infra.kafkaBrokers.join(','),
          POLICYGEN_TOPIC_NAMESPACE: pipeline.namespace,
          AUDIT_DATABASE_URL: infra.databaseUrl,
          AUDIT_SCHEMA: schema,
          AUDIT_GROUP_ID: schema,
        },
      });
      const delivered = async (): Promise<number | undefined> => {
        const { rows } = await pool
          .query<{ revision: number }>(
            `SELECT revision FROM ${schema}.deliveries WHERE node_id = $1 AND relay_id = 'root'`,
            [NODE],
          )
          .catch(() => ({ rows: [] as { revision: number }[] }));
        return rows[0]?.revision;
      };
      const failing = async (): Promise<{ codes: string[] }[]> =>
        (
          await pool.query<{ codes: string[] }>(
            `SELECT f.codes FROM ${schema}.node_results r
             JOIN ${schema}.failures f ON f.node_id = r.node_id AND f.revision = r.revision
             WHERE r.outcome = 'failed'`,
          )
        ).rows;
      const running = trail;
      await eventually(
        async () => {
          if (!running.running)
            throw new Error(`audit-trail ${running.describeExit()}:\n${running.logTail()}`);
          return (await delivered()) === imported;
        },
        { what: `the import's delivery of ${NODE} recorded`, timeoutMs: 90_000 },
      );

      const node = (await pipeline.request('GET', `/api/v1/nodes/${NODE}`)).body as Entity;
      await pipeline.request('PUT', `/api/v1/nodes/${NODE}`, {
        ...node,
        properties: { ...(node['properties'] as object), audited: true },
      });
      const changed = await pipeline.revision();
      await eventually(async () => (await delivered()) === changed, {
        what: `the delivery of ${NODE} at revision ${changed} recorded`,
        timeoutMs: 60_000,
      });

      // A directive that requires one its nodes do not have: they fail, and the trail says why.
      const directive = (await pipeline.request('GET', '/api/v1/directives/cron-db-backup')).body as Entity;
      await pipeline.request('PUT', '/api/v1/directives/cron-db-backup', {
        ...directive,
        require: [...((directive['require'] as string[]) ?? []), 'dir-app'],
      });
      await eventually(async () => (await failing()).length > 0, {
        what: 'the failing nodes recorded',
        timeoutMs: 60_000,
      });
      expect((await failing()).every((failure) => failure.codes.includes('MISSING_DEPENDENCY'))).toBe(true);
      await pipeline.request('PUT', '/api/v1/directives/cron-db-backup', directive);
      await eventually(async () => (await failing()).length === 0, {
        what: 'the failures to end',
        timeoutMs: 60_000,
      });
      const history = await pool.query<{ count: number }>(
        `SELECT count(*)::int AS count FROM ${schema}.failures`,
      );
      expect(history.rows[0]?.count).toBeGreaterThan(0);
    } finally {
      await trail?.stop();
      await pipeline.stop();
      await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await pool.end();
    }
  }, 300_000);
});
