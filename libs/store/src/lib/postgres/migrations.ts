import type { Kysely, Migration, MigrationProvider } from 'kysely';
import { sql } from 'kysely';

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
};

export const migrationProvider: MigrationProvider = {
  getMigrations: () => Promise.resolve(MIGRATIONS),
};
