import { Kysely, Migrator, PostgresDialect, sql } from 'kysely';
import type { Transaction } from 'kysely';
import type { Pool } from 'pg';
import { resilientPool } from './resilient-pool';
import type { ParsedChangeSet } from '@policygen/engine';
import { CONFIG_CHANGES_KEY, TOPICS } from '@policygen/events';
import type { ChangeCounts } from '../change-counts';
import type {
  Attribution,
  ChangeToCommit,
  CommitOptions,
  CommittedChange,
  ConfigStore,
  OutboxMessage,
  RevisionRecord,
  StoreSnapshot,
} from '../config-store';
import { outboxMessage, RevisionConflictError, revisionRecord } from '../config-store';
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
  private readonly pool: Pool;
  private readonly root: Kysely<StoreDatabase>;
  private readonly db: Kysely<StoreDatabase>;
  private readonly schema: string;
  private readonly changeTopic: string;
  private readonly maxEventBytes: number;

  constructor(options: PostgresConfigStoreOptions) {
    this.schema = options.schema ?? 'public';
    this.changeTopic = options.changeTopic ?? TOPICS.configChanges;
    this.maxEventBytes = options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
    this.pool = resilientPool(
      { connectionString: options.connectionString, max: options.maxConnections ?? 10 },
      options.onConnectionError,
    );
    this.root = new Kysely<StoreDatabase>({ dialect: new PostgresDialect({ pool: this.pool }) });
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
    options: Attribution & CommitOptions = {},
  ): Promise<CommittedChange> {
    const { expectedRevision: _expected, markPublished: _marked, ...attribution } = options;
    const [committed] = await this.commitAll([{ changeSet, ...attribution }], options);
    return committed as CommittedChange;
  }

  async commitAll(
    changes: readonly ChangeToCommit[],
    options: CommitOptions = {},
  ): Promise<CommittedChange[]> {
    const { expectedRevision, markPublished = [] } = options;
    if (changes.length === 0) {
      await this.markPublished(markPublished);
      return [];
    }
    // Settings merge with the stored ones, read under the lock: those commits take the long way.
    if (expectedRevision !== undefined && !changes.some(({ changeSet }) => setsSettings(changeSet)))
      return this.commitInOneStatement(changes, expectedRevision, markPublished);
    // A sent message is published whether or not the commit holds: marked apart from it.
    await this.markPublished(markPublished);
    return this.db.transaction().execute(async (trx) => {
      // The one row of config_state is the lock that orders commits: revisions have no gaps.
      const state = await trx
        .selectFrom('config_state')
        .select('revision')
        .where('id', '=', 1)
        .forUpdate()
        .executeTakeFirstOrThrow();
      const current = Number(state.revision);
      if (expectedRevision !== undefined && expectedRevision !== current)
        throw new RevisionConflictError(expectedRevision, current);
      const stored = changes.some(({ changeSet }) => setsSettings(changeSet))
        ? (await trx.selectFrom('entities').select('body').where('kind', '=', SETTINGS).executeTakeFirst())
            ?.body
        : undefined;
      const plan = this.plan(changes, current, stored);
      for (const [kind, keys] of plan.deletes) await deleteKeys(trx, kind, keys);
      await upsertRows(trx, plan.upserts);
      await trx
        .updateTable('config_state')
        .set({ revision: current + plan.committed.length })
        .where('id', '=', 1)
        .execute();
      await trx.insertInto('change_log').values(plan.logRows).execute();
      // In revision order: the outbox is published by id, and ids follow the insertion order.
      const queued = await trx.insertInto('outbox').values(plan.outboxRows).returning('id').execute();
      return withOutboxMessages(
        plan,
        queued.map((row) => Number(row.id)),
      );
    });
  }

  /**
   * The commit as one statement, so one round trip and no transaction to open and close: the update
   * of config_state both takes the lock that orders commits and checks the expected revision, and
   * every other write reads its result, so that none happens when it matched no row. Under that
   * lock no other commit can run, and any that ran since the statement's snapshot moved the revision,
   * so what the statement reads is what is current.
   */
  private async commitInOneStatement(
    changes: readonly ChangeToCommit[],
    expectedRevision: number,
    markPublished: readonly number[],
  ): Promise<CommittedChange[]> {
    const plan = this.plan(changes, expectedRevision, undefined);
    const deletes = [...plan.deletes].flatMap(([kind, keys]) => keys.map((key) => ({ kind, key })));
    const committedAt = plan.committed[0]?.committedAt ?? new Date();
    const result = await this.pool.query<{ revision: string; queued: string[] }>({
      name: `policygen-commit-${this.schema}`,
      text: this.commitStatement,
      values: [
        expectedRevision,
        expectedRevision + plan.committed.length,
        deletes.map((row) => row.kind),
        deletes.map((row) => row.key),
        plan.upserts.map((row) => row.kind),
        plan.upserts.map((row) => row.key),
        plan.upserts.map((row) => JSON.stringify(row.body)),
        plan.upserts.map((row) => row.revision),
        committedAt,
        plan.logRows.map((row) => row.revision),
        plan.logRows.map((row) => row.author),
        plan.logRows.map((row) => row.reason),
        plan.logRows.map((row) => row.counts),
        plan.logRows.map((row) => row.change_set),
        plan.outboxRows.map((row) => row.topic),
        plan.outboxRows.map((row) => row.key),
        plan.outboxRows.map((row) => row.payload),
        markPublished,
      ],
    });
    const [row] = result.rows;
    if (!row) {
      const current = await currentRevision(this.db);
      throw new RevisionConflictError(expectedRevision, current);
    }
    return withOutboxMessages(plan, row.queued.map(Number));
  }

  /** A table of the store's schema, quoted, for statements written by hand. */
  private table(name: string): string {
    return `"${this.schema.replaceAll('"', '""')}".${name}`;
  }

  private get commitStatement(): string {
    return `with state as (
        update ${this.table('config_state')} set revision = $2 where id = 1 and revision = $1 returning revision
      ), deleted as (
        delete from ${this.table('entities')} e using unnest($3::text[], $4::text[]) as d(kind, key), state
        where e.kind = d.kind and e.key = d.key
      ), upserted as (
        insert into ${this.table('entities')} (kind, key, body, revision)
        select u.kind, u.key, u.body::json, u.revision
        from unnest($5::text[], $6::text[], $7::text[], $8::bigint[]) as u(kind, key, body, revision), state
        on conflict (kind, key) do update set body = excluded.body, revision = excluded.revision
      ), logged as (
        insert into ${this.table('change_log')} (revision, committed_at, author, reason, counts, change_set)
        select l.revision, $9, l.author, l.reason, l.counts::json, l.change_set::json
        from unnest($10::bigint[], $11::text[], $12::text[], $13::text[], $14::text[])
          as l(revision, author, reason, counts, change_set), state
      ), queued as (
        insert into ${this.table('outbox')} (topic, key, payload, created_at)
        select o.topic, o.key, o.payload::json, $9
        from unnest($15::text[], $16::text[], $17::text[]) with ordinality as o(topic, key, payload, position), state
        order by o.position
        returning id
      ), marked as (
        update ${this.table('outbox')} set published_at = $9 where id = any($18::bigint[]) and published_at is null
      )
      select revision, array(select id from queued order by id) as queued from state`;
  }

  /**
   * The rows a group of change sets writes, at the revisions after `current`. The group's entity
   * writes are folded per entity, the last one winning: one statement per kind, not one per change
   * set (a burst of 200 single-node changes is one upsert).
   */
  private plan(changes: readonly ChangeToCommit[], current: number, storedSettings: unknown): CommitPlan {
    const committedAt = new Date();
    const committed: CommittedChange[] = [];
    const logRows: LogRow[] = [];
    const outboxRows: OutboxRow[] = [];
    const net: NetWrites = new Map();
    let settings = storedSettings;
    for (const { changeSet, author, reason } of changes) {
      const revision = current + committed.length + 1;
      foldEntityWrites(net, changeSet, revision);
      const merged = mergeSettings(changeSet, settings);
      if (merged) {
        settings = merged.body;
        netWritesOf(net, SETTINGS).set(SETTINGS, { ...merged, revision });
      }
      const changeSetText = JSON.stringify(changeSet);
      const record = revisionRecord(revision, committedAt, changeSet, author, reason);
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
    const deletes = new Map<string, string[]>();
    const upserts: RevisionedRow[] = [];
    for (const [kind, writes] of net) {
      const deleted: string[] = [];
      splitWrites(writes, upserts, deleted);
      if (deleted.length > 0) deletes.set(kind, deleted);
    }
    return { committed, logRows, outboxRows, deletes, upserts };
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

  // The outbox is read every window: plain prepared statements, not built anew each time. Its
  // payloads are read as text, sent as they are, not parsed and encoded again.
  async unpublished(limit = 1_000, after = 0): Promise<OutboxMessage[]> {
    const { rows } = await this.pool.query<{ id: string; topic: string; key: string; value: string }>({
      name: `policygen-unpublished-${this.schema}`,
      text: `select id, topic, key, payload::text as value from ${this.table('outbox')} where published_at is null and id > $2 order by id limit $1`,
      values: [limit, after],
    });
    return rows.map((row) => outboxMessage(Number(row.id), row.topic, row.key, row.value));
  }

  async markPublished(ids: readonly number[]): Promise<void> {
    if (ids.length === 0) return;
    await this.pool.query({
      name: `policygen-mark-published-${this.schema}`,
      text: `update ${this.table('outbox')} set published_at = $1 where id = any($2::bigint[])`,
      values: [new Date(), ids],
    });
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

interface LogRow {
  readonly revision: number;
  readonly committed_at: Date;
  readonly author: string | null;
  readonly reason: string | null;
  readonly counts: string;
  readonly change_set: string;
}

interface OutboxRow {
  readonly topic: string;
  readonly key: string;
  readonly payload: string;
  readonly created_at: Date;
}

/**
 * The plan's committed changes with the outbox message each wrote: `ids` are the rows' ids, given in
 * insertion order (ascending: taken in that order under the commit's lock), one per change.
 */
function withOutboxMessages(plan: CommitPlan, ids: readonly number[]): CommittedChange[] {
  const sorted = [...ids].sort((a, b) => a - b);
  return plan.committed.map((change, index) => {
    const row = plan.outboxRows[index];
    const id = sorted[index];
    if (!row || id === undefined) return change;
    return { ...change, outboxMessage: outboxMessage(id, row.topic, row.key, row.payload) };
  });
}

/** What a group commit writes: its entities' net writes, its change-log rows and its outbox messages. */
interface CommitPlan {
  readonly committed: CommittedChange[];
  readonly logRows: LogRow[];
  readonly outboxRows: OutboxRow[];
  /** Keys deleted, kind by kind. */
  readonly deletes: ReadonlyMap<string, readonly string[]>;
  readonly upserts: readonly RevisionedRow[];
}

function setsSettings(changeSet: ParsedChangeSet): boolean {
  return Object.keys(changeSet.upsert.settings).length > 0;
}

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

async function currentRevision(trx: Kysely<StoreDatabase>): Promise<number> {
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

/** Per entity kind, each key's last write of a group: its row, or null when it is deleted. */
type NetWrites = Map<string, Map<string, RevisionedRow | null>>;

/**
 * One kind's net writes as rows to upsert and keys to delete. A loop of its own, apart from `plan`:
 * an import's thousands of rows made V8 optimise `plan` inside this loop, before its last lines had
 * ever run, and that code then left for the interpreter at its return on every later commit (a
 * deoptimisation a commit, seen with `--trace-deopt`). Nothing follows the loop here.
 */
function splitWrites(
  writes: ReadonlyMap<string, RevisionedRow | null>,
  upserts: RevisionedRow[],
  deleted: string[],
): void {
  for (const [key, row] of writes) {
    if (row) upserts.push(row);
    else deleted.push(key);
  }
}

function netWritesOf(net: NetWrites, kind: string): Map<string, RevisionedRow | null> {
  let writes = net.get(kind);
  if (!writes) net.set(kind, (writes = new Map()));
  return writes;
}

/**
 * Folds a change set's entity writes into the group's, the later winning. A function of its own:
 * an import's change set loops here over every entity, and V8 compiled the whole commit plan in
 * the middle of that loop (on-stack replacement) before the rest of it had ever run — the plan then
 * fell back to the interpreter on every commit after (1,198 deoptimisations in a benchmark run).
 */
function foldEntityWrites(net: NetWrites, changeSet: ParsedChangeSet, revision: number): void {
  for (const write of entityWrites(changeSet)) {
    if (write.deletes.length === 0 && write.upserts.length === 0) continue;
    const writes = netWritesOf(net, write.kind);
    for (const key of write.deletes) writes.set(key, null);
    for (const row of write.upserts) writes.set(row.key, { ...row, revision });
  }
}
