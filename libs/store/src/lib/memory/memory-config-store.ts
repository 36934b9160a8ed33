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

/**
 * The embedded store's tables, in memory: what a Postgres schema holds for the config store. Every
 * body, change set and payload is kept as the JSON text Postgres would keep, and parsed on every
 * read, so readers get copies in the order they were written, as from a `json` column.
 */
export class MemoryConfigDatabase {
  revision = 0;
  /** kind → key → body as JSON text, and the revision that wrote it. */
  readonly entities = new Map<string, Map<string, { readonly text: string; readonly revision: number }>>();
  readonly changeLog: {
    readonly revision: number;
    readonly committedAt: Date;
    readonly author: string | null;
    readonly reason: string | null;
    readonly counts: ChangeCounts;
    readonly changeSet: string;
  }[] = [];
  /** Messages not published yet, oldest first (a published one is of no use to anybody again). */
  readonly outbox: {
    readonly id: number;
    readonly topic: string;
    readonly key: string;
    readonly payload: string;
  }[] = [];
  nextOutboxId = 1;
}

export interface MemoryConfigStoreOptions {
  /** The tables to use, e.g. shared with another store as two Postgres stores share a schema (default: new ones). */
  readonly database?: MemoryConfigDatabase;
  /** Where the outbox sends change events (default `policygen.config.changes.v1`; see `topicsFor`). */
  readonly changeTopic?: string;
  /**
   * The largest change set an event carries, as JSON bytes (default 900 KiB, as the Postgres store);
   * a larger one is left out of its event, which says so.
   */
  readonly maxEventBytes?: number;
}

/**
 * The config store of the embedded default, in memory: the Postgres store's semantics (gap-free
 * revisions, change log, outbox written with its change, snapshot order), with a commit applied
 * all at once, between two awaits, where Postgres would use a transaction. Nothing survives the process.
 */
export class MemoryConfigStore implements ConfigStore {
  readonly database: MemoryConfigDatabase;
  private readonly changeTopic: string;
  private readonly maxEventBytes: number;
  private closed = false;

  constructor(options: MemoryConfigStoreOptions = {}) {
    this.database = options.database ?? new MemoryConfigDatabase();
    this.changeTopic = options.changeTopic ?? TOPICS.configChanges;
    this.maxEventBytes = options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
  }

  async migrate(): Promise<void> {
    this.open();
  }

  async snapshot(): Promise<StoreSnapshot> {
    const db = this.open();
    const rows: EntityRow[] = [];
    const revisions: { kind: string; key: string; revision: number }[] = [];
    for (const [kind, bodies] of db.entities)
      for (const [key, { text, revision }] of bodies) {
        rows.push({ kind, key, body: JSON.parse(text) as unknown });
        revisions.push({ kind, key, revision });
      }
    return {
      revision: db.revision,
      fleet: fleetOfRows(rows),
      entityRevisions: EntityRevisions.fromRows(revisions),
    };
  }

  async commit(
    changeSet: ParsedChangeSet,
    options: Attribution & CommitOptions = {},
  ): Promise<CommittedChange> {
    const { expectedRevision: _expected, markPublished: _marked, ...attribution } = options;
    const [committed] = await this.commitAll([{ changeSet, ...attribution }], options);
    return committed as CommittedChange;
  }

  /**
   * `committedAt` and `beforeApply` are for a store that keeps these tables elsewhere too (the file
   * store): it journals the prepared commit before it is applied, and replays it with its time. With
   * `beforeApply`, the caller keeps other commits out until this one resolves.
   */
  async commitAll(
    changes: readonly ChangeToCommit[],
    options: CommitOptions & {
      readonly committedAt?: Date;
      readonly beforeApply?: (committed: readonly CommittedChange[]) => Promise<void>;
    } = {},
  ): Promise<CommittedChange[]> {
    const db = this.open();
    // Marked whether or not the commit holds, as a store of one statement does.
    if (options.markPublished) await this.markPublished(options.markPublished);
    const current = db.revision;
    if (options.expectedRevision !== undefined && options.expectedRevision !== current)
      throw new RevisionConflictError(options.expectedRevision, current);

    // Everything that can fail happens before the first write: the commit is all or nothing.
    const committedAt = options.committedAt ?? new Date();
    let storedSettings = parsed(db.entities.get(SETTINGS)?.get(SETTINGS)?.text);
    const prepared = changes.map(({ changeSet, author, reason }, index) => {
      const writes = entityWrites(changeSet).map((write) => ({
        ...write,
        upserts: write.upserts.map((row) => ({
          kind: row.kind,
          key: row.key,
          text: JSON.stringify(row.body),
        })),
      }));
      const settings = mergeSettings(changeSet, storedSettings);
      if (settings) storedSettings = settings.body;
      const revision = current + index + 1;
      const changeSetText = JSON.stringify(changeSet);
      const event = changeEvent({
        revision,
        committedAt,
        changeSet,
        changeSetText,
        maxEventBytes: this.maxEventBytes,
      });
      const record = revisionRecord(revision, committedAt, changeSet, author, reason);
      return {
        record,
        changeSet,
        writes,
        settingsText: settings ? JSON.stringify(settings.body) : undefined,
        changeSetText,
        payload: JSON.stringify(event),
      };
    });

    const committed = prepared.map(({ record, changeSet }) => ({ ...record, changeSet }));
    if (options.beforeApply && committed.length > 0) await options.beforeApply(committed);
    const written: CommittedChange[] = [];
    for (const [index, { record, writes, settingsText, changeSetText, payload }] of prepared.entries()) {
      const { revision } = record;
      for (const write of writes) {
        const bodies = db.entities.get(write.kind);
        if (bodies) for (const key of write.deletes) bodies.delete(key);
        for (const row of write.upserts) rowsOf(db, row.kind).set(row.key, { text: row.text, revision });
      }
      if (settingsText !== undefined) rowsOf(db, SETTINGS).set(SETTINGS, { text: settingsText, revision });
      db.revision = revision;
      db.changeLog.push({ ...record, changeSet: changeSetText });
      const id = db.nextOutboxId++;
      db.outbox.push({ id, topic: this.changeTopic, key: CONFIG_CHANGES_KEY, payload });
      written.push({
        ...(committed[index] as CommittedChange),
        outboxMessage: outboxMessage(id, this.changeTopic, CONFIG_CHANGES_KEY, payload),
      });
    }
    return written;
  }

  async changesSince(revision: number, limit = 1_000): Promise<CommittedChange[]> {
    return this.logEntries(revision, limit).map((entry) => ({
      ...recordOf(entry),
      changeSet: JSON.parse(entry.changeSet) as ParsedChangeSet,
    }));
  }

  async revisions(after: number, limit: number): Promise<RevisionRecord[]> {
    return this.logEntries(after, limit).map(recordOf);
  }

  async revision(revision: number): Promise<CommittedChange | undefined> {
    if (!Number.isSafeInteger(revision) || revision < 1) return undefined;
    return (await this.changesSince(revision - 1, 1))[0];
  }

  private logEntries(after: number, limit: number): MemoryConfigDatabase['changeLog'] {
    const start = Math.max(0, after);
    // Revisions are gap-free from 1: the entry of revision r is at index r - 1.
    return this.open().changeLog.slice(start, start + Math.max(0, limit));
  }

  async unpublished(limit = 1_000, after = 0): Promise<OutboxMessage[]> {
    return this.open()
      .outbox.filter((message) => message.id > after)
      .slice(0, Math.max(0, limit))
      .map((message) => outboxMessage(message.id, message.topic, message.key, message.payload));
  }

  async markPublished(ids: readonly number[]): Promise<void> {
    const db = this.open();
    if (ids.length === 0) return;
    const published = new Set(ids);
    let kept = 0;
    for (const message of db.outbox) if (!published.has(message.id)) db.outbox[kept++] = message;
    db.outbox.length = kept;
  }

  async unpublishedCount(): Promise<number> {
    return this.open().outbox.length;
  }

  async ping(): Promise<void> {
    this.open();
  }

  /** Closes this store; the database stays, for the other stores that share it. */
  async close(): Promise<void> {
    this.closed = true;
  }

  private open(): MemoryConfigDatabase {
    if (this.closed) throw new Error('the config store is closed');
    return this.database;
  }
}

/** A log entry as a reader gets it: a copy, as from a database. */
function recordOf(entry: MemoryConfigDatabase['changeLog'][number]): RevisionRecord {
  return {
    revision: entry.revision,
    committedAt: new Date(entry.committedAt),
    author: entry.author,
    reason: entry.reason,
    counts: structuredClone(entry.counts),
  };
}

function rowsOf(
  db: MemoryConfigDatabase,
  kind: string,
): Map<string, { readonly text: string; readonly revision: number }> {
  let rows = db.entities.get(kind);
  if (!rows) db.entities.set(kind, (rows = new Map()));
  return rows;
}

function parsed(text: string | undefined): unknown {
  return text === undefined ? undefined : (JSON.parse(text) as unknown);
}
