import { Kysely, Migrator, PostgresDialect, sql } from 'kysely';
import type { Transaction } from 'kysely';
import { Pool } from 'pg';
import type { Fleet, ParsedChangeSet, Settings } from '@policygen/engine';
import { compareCodeUnits, relationshipKey } from '@policygen/engine';
import type { ConfigChangeEvent } from '@policygen/events';
import { CONFIG_CHANGES_KEY, TOPICS } from '@policygen/events';
import type { CommittedChange, ConfigStore, OutboxMessage } from '../config-store';
import { RevisionConflictError } from '../config-store';
import { migrationProvider } from './migrations';
import type { StoreDatabase } from './schema';

/** Entity kinds as stored, and how each collection keys its entities. */
const COLLECTIONS = {
  techniques: (entity: { id: string; version: string }) => `${entity.id}@${entity.version}`,
  directives: (entity: { id: string }) => entity.id,
  relationships: relationshipKey,
  rules: (entity: { id: string }) => entity.id,
  groups: (entity: { id: string }) => entity.id,
  nodes: (entity: { id: string }) => entity.id,
  relays: (entity: { id: string }) => entity.id,
} as const;
type Collection = keyof typeof COLLECTIONS;
const PARAMETER = 'parameter';
const SETTINGS = 'settings';
const DEFAULT_SETTINGS: Settings = { ordering: 'alphanumeric', orderingSeed: 0 };
const INSERT_BATCH = 1_000;

export interface PostgresConfigStoreOptions {
  readonly connectionString: string;
  /** The Postgres schema of the tables (created if missing); default `public`. */
  readonly schema?: string;
  readonly maxConnections?: number;
  /** Where the outbox sends change events (default `policygen.config.changes.v1`; see `topicsFor`). */
  readonly changeTopic?: string;
  /**
   * The largest change set an event carries, as JSON bytes (default 900 KiB, under Kafka's default
   * 1 MiB message limit); a larger one is left out of its event, which says so.
   */
  readonly maxEventBytes?: number;
}

const DEFAULT_MAX_EVENT_BYTES = 900 * 1024;

/** The config store on Postgres, through Kysely: one transaction per commit, gap-free revisions. */
export class PostgresConfigStore implements ConfigStore {
  private readonly root: Kysely<StoreDatabase>;
  private readonly db: Kysely<StoreDatabase>;
  private readonly schema: string;
  private readonly changeTopic: string;
  private readonly maxEventBytes: number;

  constructor(options: PostgresConfigStoreOptions) {
    this.schema = options.schema ?? 'public';
    this.changeTopic = options.changeTopic ?? TOPICS.configChanges;
    this.maxEventBytes = options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
    this.root = new Kysely<StoreDatabase>({
      dialect: new PostgresDialect({
        pool: new Pool({ connectionString: options.connectionString, max: options.maxConnections ?? 10 }),
      }),
    });
    this.db = this.root.withSchema(this.schema);
  }

  async migrate(): Promise<void> {
    await sql`create schema if not exists ${sql.id(this.schema)}`.execute(this.root);
    const migrator = new Migrator({
      db: this.db as Kysely<unknown>,
      provider: migrationProvider,
      migrationTableSchema: this.schema,
    });
    const { error } = await migrator.migrateToLatest();
    if (error) throw error instanceof Error ? error : new Error(String(error));
  }

  async snapshot(): Promise<{ revision: number; fleet: Fleet }> {
    return this.db
      .transaction()
      .setIsolationLevel('repeatable read')
      .execute(async (trx) => {
        const revision = await currentRevision(trx);
        const rows = await trx.selectFrom('entities').select(['kind', 'key', 'body']).execute();
        // Sorted here, not by the database's collation: the same order as the engine's `toFleet`.
        rows.sort((a, b) => compareCodeUnits(sortKey(a), sortKey(b)));
        const byKind = new Map<string, unknown[]>();
        for (const row of rows) {
          const list = byKind.get(row.kind);
          if (list) list.push(row.body);
          else byKind.set(row.kind, [row.body]);
        }
        const parameters: Record<string, unknown> = {};
        for (const row of rows) if (row.kind === PARAMETER) parameters[row.key] = row.body;
        const settings =
          (rows.find((row) => row.kind === SETTINGS)?.body as Settings | undefined) ?? DEFAULT_SETTINGS;
        const fleet = {
          settings,
          parameters,
          ...Object.fromEntries(
            (Object.keys(COLLECTIONS) as Collection[]).map((collection) => [
              collection,
              byKind.get(collection) ?? [],
            ]),
          ),
        } as unknown as Fleet;
        return { revision, fleet };
      });
  }

  async commit(
    changeSet: ParsedChangeSet,
    options: { readonly expectedRevision?: number } = {},
  ): Promise<CommittedChange> {
    return this.db.transaction().execute(async (trx) => {
      // The one row of config_state is the lock that orders commits: revisions have no gaps.
      const state = await trx
        .selectFrom('config_state')
        .select('revision')
        .where('id', '=', 1)
        .forUpdate()
        .executeTakeFirstOrThrow();
      const current = Number(state.revision);
      if (options.expectedRevision !== undefined && options.expectedRevision !== current)
        throw new RevisionConflictError(options.expectedRevision, current);

      for (const collection of Object.keys(COLLECTIONS) as Collection[]) {
        const keyOf = COLLECTIONS[collection] as (entity: unknown) => string;
        const deletes = (changeSet.delete[collection] as readonly unknown[]).map((entry) =>
          typeof entry === 'string' ? entry : keyOf(entry),
        );
        await deleteKeys(trx, collection, deletes);
        await upsertRows(
          trx,
          (changeSet.upsert[collection] as readonly unknown[]).map((entity) => ({
            kind: collection,
            key: keyOf(entity),
            body: entity,
          })),
        );
      }
      await deleteKeys(trx, PARAMETER, changeSet.delete.parameters);
      await upsertRows(
        trx,
        Object.entries(changeSet.upsert.parameters).map(([name, value]) => ({
          kind: PARAMETER,
          key: name,
          body: value,
        })),
      );
      if (Object.keys(changeSet.upsert.settings).length > 0) {
        const stored = await trx
          .selectFrom('entities')
          .select('body')
          .where('kind', '=', SETTINGS)
          .executeTakeFirst();
        const settings = {
          ...((stored?.body as Settings | undefined) ?? DEFAULT_SETTINGS),
          ...changeSet.upsert.settings,
        };
        await upsertRows(trx, [{ kind: SETTINGS, key: SETTINGS, body: settings }]);
      }

      const revision = current + 1;
      const committedAt = new Date();
      const changeSetText = JSON.stringify(changeSet);
      await trx.updateTable('config_state').set({ revision }).where('id', '=', 1).execute();
      await trx
        .insertInto('change_log')
        .values({ revision, committed_at: committedAt, change_set: changeSetText })
        .execute();
      const changeSetBytes = Buffer.byteLength(changeSetText);
      const header = {
        schemaVersion: 1,
        type: 'config.change',
        revision,
        committedAt: committedAt.toISOString(),
      } as const;
      const event: ConfigChangeEvent =
        changeSetBytes > this.maxEventBytes
          ? { ...header, changeSetOmitted: { bytes: changeSetBytes } }
          : { ...header, changeSet: { upsert: { ...changeSet.upsert }, delete: { ...changeSet.delete } } };
      await trx
        .insertInto('outbox')
        .values({
          topic: this.changeTopic,
          key: CONFIG_CHANGES_KEY,
          payload: JSON.stringify(event),
          created_at: committedAt,
        })
        .execute();
      return { revision, committedAt, changeSet };
    });
  }

  async changesSince(revision: number, limit = 1_000): Promise<CommittedChange[]> {
    const rows = await this.db
      .selectFrom('change_log')
      .select(['revision', 'committed_at', 'change_set'])
      .where('revision', '>', revision)
      .orderBy('revision')
      .limit(limit)
      .execute();
    return rows.map((row) => ({
      revision: Number(row.revision),
      committedAt: row.committed_at,
      changeSet: row.change_set as ParsedChangeSet,
    }));
  }

  async unpublished(limit = 1_000): Promise<OutboxMessage[]> {
    const rows = await this.db
      .selectFrom('outbox')
      .select(['id', 'topic', 'key', 'payload'])
      .where('published_at', 'is', null)
      .orderBy('id')
      .limit(limit)
      .execute();
    return rows.map((row) => ({ id: Number(row.id), topic: row.topic, key: row.key, payload: row.payload }));
  }

  async markPublished(ids: readonly number[]): Promise<void> {
    if (ids.length === 0) return;
    await this.db
      .updateTable('outbox')
      .set({ published_at: new Date() })
      .where('id', 'in', [...ids])
      .execute();
  }

  async close(): Promise<void> {
    await this.root.destroy();
  }
}

/** Techniques sort by id, then version; everything else by its key. */
function sortKey(row: { kind: string; key: string }): string {
  if (row.kind !== 'techniques') return `${row.kind}\u0000${row.key}`;
  const at = row.key.lastIndexOf('@');
  return `${row.kind}\u0000${row.key.slice(0, at)}\u0000${row.key.slice(at + 1)}`;
}

async function currentRevision(trx: Transaction<StoreDatabase>): Promise<number> {
  const state = await trx
    .selectFrom('config_state')
    .select('revision')
    .where('id', '=', 1)
    .executeTakeFirstOrThrow();
  return Number(state.revision);
}

async function deleteKeys(
  trx: Transaction<StoreDatabase>,
  kind: string,
  keys: readonly string[],
): Promise<void> {
  for (let start = 0; start < keys.length; start += INSERT_BATCH) {
    await trx
      .deleteFrom('entities')
      .where('kind', '=', kind)
      .where('key', 'in', keys.slice(start, start + INSERT_BATCH))
      .execute();
  }
}

async function upsertRows(
  trx: Transaction<StoreDatabase>,
  rows: readonly { kind: string; key: string; body: unknown }[],
): Promise<void> {
  for (let start = 0; start < rows.length; start += INSERT_BATCH) {
    await trx
      .insertInto('entities')
      .values(
        rows.slice(start, start + INSERT_BATCH).map((row) => ({ ...row, body: JSON.stringify(row.body) })),
      )
      .onConflict((conflict) =>
        conflict.columns(['kind', 'key']).doUpdateSet((eb) => ({ body: eb.ref('excluded.body') })),
      )
      .execute();
  }
}
