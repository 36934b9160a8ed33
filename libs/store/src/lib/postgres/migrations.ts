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
};

export const migrationProvider: MigrationProvider = {
  getMigrations: () => Promise.resolve(MIGRATIONS),
};
