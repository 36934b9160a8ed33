import { Kysely, Migrator, PostgresDialect, sql } from 'kysely';
import type { Transaction } from 'kysely';
import { resilientPool } from './resilient-pool';
import type { ParsedChangeSet } from '@policygen/engine';
import { CONFIG_CHANGES_KEY, TOPICS } from '@policygen/events';
import type { ChangeCounts } from '../change-counts';
import { changeCounts } from '../change-counts';
import type {
  Attribution,
  ChangeToCommit,
  CommittedChange,
  ConfigStore,
  OutboxMessage,
  RevisionRecord,
  StoreSnapshot,
} from '../config-store';
import { RevisionConflictError } from '../config-store';
import { EntityRevisions } from '../entity-revisions';
import type { EntityRow } from '../entity-rows';
import {
  changeEvent,
  DEFAULT_MAX_EVENT_BYTES,
  entityWrites,
  fleetOfRows,
  mergeSettings,
  SETTINGS,
} from '../entity-rows';
import { migrationProvider } from './migrations';
import type { StoreDatabase } from './schema';

const INSERT_BATCH = 1_000;

export interface PostgresConfigStoreOptions {
  readonly connectionString: string;
  /** The Postgres schema of the tables (created if missing); default `public`. */
  readonly schema?: string;
  readonly maxConnections?: number;
  /** Told of a connection's error (Postgres restarted or gone): the query fails, the next one reconnects. */
  readonly onConnectionError?: (error: Error) => void;
  /** Where the outbox sends change events (default `policygen.config.changes.v1`; see `topicsFor`). */
  readonly changeTopic?: string;
  /**
   * The largest change set an event carries, as JSON bytes (default 900 KiB, under Kafka's default
   * 1 MiB message limit); a larger one is left out of its event, which says so.
   */
  readonly maxEventBytes?: number;
}

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
        pool: resilientPool(
          { connectionString: options.connectionString, max: options.maxConnections ?? 10 },
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
      provider: migrationProvider,
      migrationTableSchema: this.schema,
    });
    const { error } = await migrator.migrateToLatest();
    if (error) throw error instanceof Error ? error : new Error(String(error));
  }

  async snapshot(): Promise<StoreSnapshot> {
    return this.db
      .transaction()
      .setIsolationLevel('repeatable read')
      .execute(async (trx) => {
        const revision = await currentRevision(trx);
        const rows = await trx.selectFrom('entities').select(['kind', 'key', 'body', 'revision']).execute();
        const entityRevisions = EntityRevisions.fromRows(
          rows.map((row) => ({ kind: row.kind, key: row.key, revision: Number(row.revision) })),
        );
        const fleet = fleetOfRows(rows);
        return { revision, fleet, entityRevisions };
      });
  }

  async commit(
    changeSet: ParsedChangeSet,
    options: Attribution & { readonly expectedRevision?: number } = {},
  ): Promise<CommittedChange> {
    const { expectedRevision, ...attribution } = options;
    const [committed] = await this.commitAll(
      [{ changeSet, ...attribution }],
      expectedRevision === undefined ? {} : { expectedRevision },
    );
    return committed as CommittedChange;
  }

  async commitAll(
    changes: readonly ChangeToCommit[],
    options: { readonly expectedRevision?: number } = {},
  ): Promise<CommittedChange[]> {
    if (changes.length === 0) return [];
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

      const committedAt = new Date();
      const committed: CommittedChange[] = [];
      const logRows: {
        revision: number;
        committed_at: Date;
        author: string | null;
        reason: string | null;
        counts: string;
        change_set: string;
      }[] = [];
      const outboxRows: { topic: string; key: string; payload: string; created_at: Date }[] = [];
      // The group's writes folded per entity, the last one winning: one statement per kind, not
      // one per change set (a burst of 200 single-node changes is one upsert).
      const net = new Map<string, Map<string, RevisionedRow | null>>();
      const netOf = (kind: string): Map<string, RevisionedRow | null> => {
        let writes = net.get(kind);
        if (!writes) net.set(kind, (writes = new Map()));
        return writes;
      };
      let settings: unknown;
      let settingsRead = false;
      for (const { changeSet, author, reason } of changes) {
        const revision = current + committed.length + 1;
        for (const write of entityWrites(changeSet)) {
          const writes = netOf(write.kind);
          for (const key of write.deletes) writes.set(key, null);
          for (const row of write.upserts) writes.set(row.key, { ...row, revision });
        }
        if (Object.keys(changeSet.upsert.settings).length > 0) {
          if (!settingsRead) {
            const stored = await trx
              .selectFrom('entities')
              .select('body')
              .where('kind', '=', SETTINGS)
              .executeTakeFirst();
            settings = stored?.body;
            settingsRead = true;
          }
          const merged = mergeSettings(changeSet, settings);
          if (merged) {
            settings = merged.body;
            netOf(SETTINGS).set(SETTINGS, { ...merged, revision });
          }
        }
        const changeSetText = JSON.stringify(changeSet);
        const record: RevisionRecord = {
          revision,
          committedAt,
          author: author ?? null,
          reason: reason ?? null,
          counts: changeCounts(changeSet),
        };
        logRows.push({
          revision,
          committed_at: committedAt,
          author: record.author,
          reason: record.reason,
          counts: JSON.stringify(record.counts),
          change_set: changeSetText,
        });
        const event = changeEvent({
          revision,
          committedAt,
          changeSet,
          changeSetText,
          maxEventBytes: this.maxEventBytes,
        });
        outboxRows.push({
          topic: this.changeTopic,
          key: CONFIG_CHANGES_KEY,
          payload: JSON.stringify(event),
          created_at: committedAt,
        });
        committed.push({ ...record, changeSet });
      }
      for (const [kind, writes] of net) {
        const deleted: string[] = [];
        const upserted: RevisionedRow[] = [];
        for (const [key, row] of writes) {
          if (row) upserted.push(row);
          else deleted.push(key);
        }
        await deleteKeys(trx, kind, deleted);
        await upsertRows(trx, upserted);
      }
      await trx
        .updateTable('config_state')
        .set({ revision: current + committed.length })
        .where('id', '=', 1)
        .execute();
      await trx.insertInto('change_log').values(logRows).execute();
      // In revision order: the outbox is published by id, and ids follow the insertion order.
      await trx.insertInto('outbox').values(outboxRows).execute();
      return committed;
    });
  }

  async changesSince(revision: number, limit = 1_000): Promise<CommittedChange[]> {
    const rows = await this.db
      .selectFrom('change_log')
      .select([...RECORD_COLUMNS, 'change_set'])
      .where('revision', '>', revision)
      .orderBy('revision')
      .limit(limit)
      .execute();
    return rows.map((row) => ({ ...recordOf(row), changeSet: row.change_set as ParsedChangeSet }));
  }

  async revisions(after: number, limit: number): Promise<RevisionRecord[]> {
    const rows = await this.db
      .selectFrom('change_log')
      .select(RECORD_COLUMNS)
      .where('revision', '>', after)
      .orderBy('revision')
      .limit(limit)
      .execute();
    return rows.map(recordOf);
  }

  async revision(revision: number): Promise<CommittedChange | undefined> {
    if (!Number.isSafeInteger(revision)) return undefined;
    const row = await this.db
      .selectFrom('change_log')
      .select([...RECORD_COLUMNS, 'change_set'])
      .where('revision', '=', revision)
      .executeTakeFirst();
    return row && { ...recordOf(row), changeSet: row.change_set as ParsedChangeSet };
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

  async unpublishedCount(): Promise<number> {
    const row = await this.db
      .selectFrom('outbox')
      .select((eb) => eb.fn.countAll<string>().as('count'))
      .where('published_at', 'is', null)
      .executeTakeFirstOrThrow();
    return Number(row.count);
  }

  async ping(): Promise<void> {
    await sql`select 1`.execute(this.db);
  }

  async close(): Promise<void> {
    await this.root.destroy();
  }
}

/** An entity row and the revision that writes it. */
type RevisionedRow = EntityRow & { readonly revision: number };

const RECORD_COLUMNS = ['revision', 'committed_at', 'author', 'reason', 'counts'] as const;

function recordOf(row: {
  revision: number;
  committed_at: Date;
  author: string | null;
  reason: string | null;
  counts: unknown;
}): RevisionRecord {
  return {
    revision: Number(row.revision),
    committedAt: row.committed_at,
    author: row.author,
    reason: row.reason,
    counts: row.counts as ChangeCounts,
  };
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

async function upsertRows(trx: Transaction<StoreDatabase>, rows: readonly RevisionedRow[]): Promise<void> {
  for (let start = 0; start < rows.length; start += INSERT_BATCH) {
    await trx
      .insertInto('entities')
      .values(
        rows.slice(start, start + INSERT_BATCH).map((row) => ({ ...row, body: JSON.stringify(row.body) })),
      )
      .onConflict((conflict) =>
        conflict.columns(['kind', 'key']).doUpdateSet((eb) => ({
          body: eb.ref('excluded.body'),
          revision: eb.ref('excluded.revision'),
        })),
      )
      .execute();
  }
}
