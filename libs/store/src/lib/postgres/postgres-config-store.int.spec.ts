import { randomBytes } from 'node:crypto';
import { Kysely, Migrator, PostgresDialect, sql } from 'kysely';
import { Pool } from 'pg';
import { emptyChangeSet } from '@policygen/engine';
import type { ParsedChangeSet } from '@policygen/engine';
import { getTestInfrastructure } from '@policygen/testing-infra';
import { describeConfigStoreContract } from '../config-store-contract';
import { migrationProvider } from './migrations';
import { PostgresConfigStore } from './postgres-config-store';

/** The config store on the harness's real Postgres, each test in a schema of its own. */
describeConfigStoreContract('PostgresConfigStore', () => {
  const { databaseUrl } = getTestInfrastructure();
  const schema = `store_${randomBytes(6).toString('hex')}`;
  return {
    open: (options) => new PostgresConfigStore({ connectionString: databaseUrl, schema, ...options }),
    async dispose() {
      const pool = new Pool({ connectionString: databaseUrl });
      await pool.query(`drop schema if exists "${schema}" cascade`);
      await pool.end();
    },
  };
});

describe('PostgresConfigStore migrations', () => {
  const { databaseUrl } = getTestInfrastructure();
  const schema = `store_${randomBytes(6).toString('hex')}`;
  let pool: Pool;

  beforeAll(() => {
    pool = new Pool({ connectionString: databaseUrl });
  });
  afterAll(async () => {
    await pool.query(`drop schema if exists "${schema}" cascade`);
    await pool.end();
  });

  it('gives the revisions logged before the audit trail their counts, no author, and every entity the current revision', async () => {
    const db = new Kysely<unknown>({
      dialect: new PostgresDialect({ pool: new Pool({ connectionString: databaseUrl }) }),
    });
    await sql`create schema ${sql.id(schema)}`.execute(db);
    const migrator = new Migrator({
      db: db.withSchema(schema),
      provider: migrationProvider,
      migrationTableSchema: schema,
    });
    expect((await migrator.migrateTo('0002-json-keeps-key-order')).error).toBeUndefined();
    await db.destroy();

    const empty = emptyChangeSet();
    const logged = [
      { ...empty, upsert: { ...empty.upsert, parameters: { a: 1, b: 2 } } },
      { ...empty, delete: { ...empty.delete, parameters: ['b'] } },
    ];
    await pool.query(`update "${schema}".config_state set revision = 2`);
    await pool.query(`insert into "${schema}".entities (kind, key, body) values ('parameter', 'a', '1')`);
    for (const [index, changeSet] of logged.entries())
      await pool.query(
        `insert into "${schema}".change_log (revision, committed_at, change_set) values ($1, now(), $2)`,
        [index + 1, JSON.stringify(changeSet)],
      );

    const store = new PostgresConfigStore({ connectionString: databaseUrl, schema });
    try {
      await store.migrate();
      expect(await store.revisions(0, 10)).toEqual([
        {
          revision: 1,
          committedAt: expect.any(Date),
          author: null,
          reason: null,
          counts: { parameters: { upserted: 2, deleted: 0 } },
        },
        {
          revision: 2,
          committedAt: expect.any(Date),
          author: null,
          reason: null,
          counts: { parameters: { upserted: 0, deleted: 1 } },
        },
      ]);
      const snapshot = await store.snapshot();
      expect(snapshot.fleet.parameters).toEqual({ a: 1 });
      expect(snapshot.entityRevisions.of('parameter', 'a')).toBe(2);
      expect((await store.commit(logged[0] as ParsedChangeSet, { author: 'after' })).author).toBe('after');
    } finally {
      await store.close();
    }
  });
});
