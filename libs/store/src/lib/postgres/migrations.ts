import type { Kysely, Migration, MigrationProvider } from 'kysely';
import { sql } from 'kysely';
import type { ParsedChangeSet } from '@policygen/engine';
import { changeCounts } from '../change-counts';

/** Change-log rows counted at a time when the audit-trail migration fills in the counts of old revisions. */
const BACKFILL_BATCH = 500;

/** The store's schema, as numbered migrations: applied in order, each once. */
const MIGRATIONS: Record<string, Migration> = {
  '0001-config-store': {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('config_state')
        .addColumn('id', 'integer', (column) => column.primaryKey().check(sql`id = 1`))
        .addColumn('revision', 'bigint', (column) => column.notNull())
        .execute();
      await db
        .insertInto('config_state' as never)
        .values({ id: 1, revision: 0 } as never)
        .execute();
      await db.schema
        .createTable('entities')
        .addColumn('kind', 'text', (column) => column.notNull())
        .addColumn('key', 'text', (column) => column.notNull())
        .addColumn('body', 'jsonb', (column) => column.notNull())
        .addPrimaryKeyConstraint('entities_pk', ['kind', 'key'])
        .execute();
      await db.schema
        .createTable('change_log')
        .addColumn('revision', 'bigint', (column) => column.primaryKey())
        .addColumn('committed_at', 'timestamptz', (column) => column.notNull())
        .addColumn('change_set', 'jsonb', (column) => column.notNull())
        .execute();
      await db.schema
        .createTable('outbox')
        .addColumn('id', 'bigserial', (column) => column.primaryKey())
        .addColumn('topic', 'text', (column) => column.notNull())
        .addColumn('key', 'text', (column) => column.notNull())
        .addColumn('payload', 'jsonb', (column) => column.notNull())
        .addColumn('created_at', 'timestamptz', (column) => column.notNull())
        .addColumn('published_at', 'timestamptz')
        .execute();
      await db.schema
        .createIndex('outbox_unpublished')
        .on('outbox')
        .column('id')
        .where(sql.ref('published_at'), 'is', null)
        .execute();
    },
  },
  // jsonb reorders object keys, and key order is meaning here: a technique's promise attributes
  // are rendered in the order they are written. json keeps the text as it was given.
  '0002-json-keeps-key-order': {
    async up(db: Kysely<unknown>): Promise<void> {
      for (const [table, column] of [
        ['entities', 'body'],
        ['change_log', 'change_set'],
        ['outbox', 'payload'],
      ] as const)
        await db.schema
          .alterTable(table)
          .alterColumn(column, (alter) => alter.setDataType(sql`json using ${sql.ref(column)}::json`))
          .execute();
    },
  },
  // The audit trail: who committed each revision, why, and how much it changed; and each entity's
  // own revision, its ETag. Revisions logged before know no author or reason (null); their counts
  // are computed from their change sets. Entities written before are taken to be at the revision
  // of the migration: a client holding an older ETag gets a 412 once, never a lost update.
  '0003-audit-trail': {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .alterTable('change_log')
        .addColumn('author', 'text')
        .addColumn('reason', 'text')
        .addColumn('counts', 'json', (column) => column.notNull().defaultTo(sql`'{}'::json`))
        .execute();
      const log = db as unknown as Kysely<{
        change_log: { revision: string; change_set: ParsedChangeSet; counts: string };
      }>;
      for (let after = '0'; ;) {
        const rows = await log
          .selectFrom('change_log')
          .select(['revision', 'change_set'])
          .where('revision', '>', after)
          .orderBy('revision')
          .limit(BACKFILL_BATCH)
          .execute();
        const last = rows.at(-1);
        if (!last) break;
        for (const row of rows)
          await log
            .updateTable('change_log')
            .set({ counts: JSON.stringify(changeCounts(row.change_set)) })
            .where('revision', '=', row.revision)
            .execute();
        after = last.revision;
      }
      await db.schema
        .alterTable('change_log')
        .alterColumn('counts', (alter) => alter.dropDefault())
        .execute();
      await db.schema
        .alterTable('entities')
        .addColumn('revision', 'bigint', (column) => column.notNull().defaultTo(0))
        .execute();
      const tables = db as unknown as Kysely<{
        entities: { revision: string };
        config_state: { id: number; revision: string };
      }>;
      await tables
        .updateTable('entities')
        .set((eb) => ({
          revision: eb
            .selectFrom('config_state')
            .select('config_state.revision')
            .where('config_state.id', '=', 1),
        }))
        .execute();
      await db.schema
        .alterTable('entities')
        .alterColumn('revision', (alter) => alter.dropDefault())
        .execute();
    },
  },
};

export const migrationProvider: MigrationProvider = {
  getMigrations: () => Promise.resolve(MIGRATIONS),
};
