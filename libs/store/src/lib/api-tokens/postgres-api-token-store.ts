import { Kysely, Migrator, PostgresDialect, sql } from 'kysely';
import type { Migration } from 'kysely';
import { resilientPool } from '../postgres/resilient-pool';
import type { ApiTokenRecord, ApiTokenRole, ApiTokenStore } from './api-token-store';
import { ApiTokenNameTakenError } from './api-token-store';

interface ApiTokenTables {
  api_tokens: {
    id: string;
    name: string;
    role: string;
    digest: string;
    created_at: Date;
    created_by: string;
    expires_at: Date | null;
    revoked_at: Date | null;
  };
}

const MIGRATIONS: Record<string, Migration> = {
  '0001-api-tokens': {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('api_tokens')
        .addColumn('id', 'text', (column) => column.primaryKey())
        .addColumn('name', 'text', (column) => column.notNull())
        .addColumn('role', 'text', (column) => column.notNull())
        .addColumn('digest', 'text', (column) => column.notNull())
        .addColumn('created_at', 'timestamptz', (column) => column.notNull())
        .addColumn('created_by', 'text', (column) => column.notNull())
        .addColumn('expires_at', 'timestamptz')
        .addColumn('revoked_at', 'timestamptz')
        .execute();
    },
  },
};

export interface PostgresApiTokenStoreOptions {
  readonly connectionString: string;
  /** The Postgres schema of the table (created if missing); default `public`. */
  readonly schema?: string;
  /** Told of a connection's error (Postgres restarted or gone): the query fails, the next one reconnects. */
  readonly onConnectionError?: (error: Error) => void;
}

/** API tokens on Postgres, beside the config store's tables, with migrations of their own. */
export class PostgresApiTokenStore implements ApiTokenStore {
  private readonly root: Kysely<ApiTokenTables>;
  private readonly db: Kysely<ApiTokenTables>;
  private readonly schema: string;

  constructor(options: PostgresApiTokenStoreOptions) {
    this.schema = options.schema ?? 'public';
    this.root = new Kysely<ApiTokenTables>({
      dialect: new PostgresDialect({
        pool: resilientPool(
          { connectionString: options.connectionString, max: 4 },
          options.onConnectionError,
        ),
      }),
    });
    this.db = this.root.withSchema(this.schema);
  }

  async migrate(): Promise<void> {
    await sql`create schema if not exists ${sql.id(this.schema)}`.execute(this.root);
    const migrator = new Migrator({
      db: this.db as Kysely<unknown>,
      provider: { getMigrations: () => Promise.resolve(MIGRATIONS) },
      migrationTableSchema: this.schema,
      // Kysely's default table is the config store's: each store keeps its own list of migrations.
      migrationTableName: 'api_token_migrations',
      migrationLockTableName: 'api_token_migrations_lock',
    });
    const { error } = await migrator.migrateToLatest();
    if (error) throw error instanceof Error ? error : new Error(String(error));
  }

  async create(record: ApiTokenRecord): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      // Two creations of one name wait for each other here, so the check below sees the other's row.
      await sql`select pg_advisory_xact_lock(hashtext(${`policygen-api-token:${record.name}`}))`.execute(trx);
      const taken = await trx
        .selectFrom('api_tokens')
        .select('id')
        .where('name', '=', record.name)
        .where('revoked_at', 'is', null)
        .where((where) =>
          where.or([where('expires_at', 'is', null), where('expires_at', '>', record.createdAt)]),
        )
        .executeTakeFirst();
      if (taken) throw new ApiTokenNameTakenError(record.name);
      await trx
        .insertInto('api_tokens')
        .values({
          id: record.id,
          name: record.name,
          role: record.role,
          digest: record.digest,
          created_at: record.createdAt,
          created_by: record.createdBy,
          expires_at: record.expiresAt,
          revoked_at: record.revokedAt,
        })
        .execute();
    });
  }

  async find(id: string): Promise<ApiTokenRecord | null> {
    const row = await this.db.selectFrom('api_tokens').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? recordOf(row) : null;
  }

  async list(): Promise<ApiTokenRecord[]> {
    const rows = await this.db
      .selectFrom('api_tokens')
      .selectAll()
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(recordOf);
  }

  async revoke(id: string, at: Date): Promise<boolean> {
    const result = await this.db
      .updateTable('api_tokens')
      .set({ revoked_at: at })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async close(): Promise<void> {
    await this.root.destroy();
  }
}

function recordOf(row: ApiTokenTables['api_tokens']): ApiTokenRecord {
  return {
    id: row.id,
    name: row.name,
    role: row.role as ApiTokenRole,
    digest: row.digest,
    createdAt: row.created_at,
    createdBy: row.created_by,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
  };
}
