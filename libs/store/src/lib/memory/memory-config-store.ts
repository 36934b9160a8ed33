import type { Fleet, ParsedChangeSet } from '@policygen/engine';
import { CONFIG_CHANGES_KEY, TOPICS } from '@policygen/events';
import type { CommittedChange, ConfigStore, OutboxMessage } from '../config-store';
import { RevisionConflictError } from '../config-store';
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
  /** kind → key → body as JSON text. */
  readonly entities = new Map<string, Map<string, string>>();
  readonly changeLog: {
    readonly revision: number;
    readonly committedAt: Date;
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

  async snapshot(): Promise<{ revision: number; fleet: Fleet }> {
    const db = this.open();
    const rows: EntityRow[] = [];
    for (const [kind, bodies] of db.entities)
      for (const [key, body] of bodies) rows.push({ kind, key, body: JSON.parse(body) as unknown });
    return { revision: db.revision, fleet: fleetOfRows(rows) };
  }

  async commit(
    changeSet: ParsedChangeSet,
    options: { readonly expectedRevision?: number } = {},
  ): Promise<CommittedChange> {
    const [committed] = await this.commitAll([changeSet], options);
    return committed as CommittedChange;
  }

  async commitAll(
    changeSets: readonly ParsedChangeSet[],
    options: { readonly expectedRevision?: number } = {},
  ): Promise<CommittedChange[]> {
    const db = this.open();
    const current = db.revision;
    if (options.expectedRevision !== undefined && options.expectedRevision !== current)
      throw new RevisionConflictError(options.expectedRevision, current);

    // Everything that can fail happens before the first write: the commit is all or nothing.
    const committedAt = new Date();
    let storedSettings = parsed(db.entities.get(SETTINGS)?.get(SETTINGS));
    const prepared = changeSets.map((changeSet, index) => {
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
      return {
        changeSet,
        writes,
        settingsText: settings ? JSON.stringify(settings.body) : undefined,
        revision,
        changeSetText,
        payload: JSON.stringify(event),
      };
    });

    for (const { writes, settingsText, revision, changeSetText, payload } of prepared) {
      for (const write of writes) {
        const bodies = db.entities.get(write.kind);
        if (bodies) for (const key of write.deletes) bodies.delete(key);
        for (const row of write.upserts) rowsOf(db, row.kind).set(row.key, row.text);
      }
      if (settingsText !== undefined) rowsOf(db, SETTINGS).set(SETTINGS, settingsText);
      db.revision = revision;
      db.changeLog.push({ revision, committedAt, changeSet: changeSetText });
      db.outbox.push({ id: db.nextOutboxId++, topic: this.changeTopic, key: CONFIG_CHANGES_KEY, payload });
    }
    return prepared.map(({ changeSet, revision }) => ({ revision, committedAt, changeSet }));
  }

  async changesSince(revision: number, limit = 1_000): Promise<CommittedChange[]> {
    const db = this.open();
    // Revisions are gap-free from 1: the entry of revision r is at index r - 1.
    return db.changeLog
      .slice(Math.max(0, revision), Math.max(0, revision) + Math.max(0, limit))
      .map((entry) => ({
        revision: entry.revision,
        committedAt: new Date(entry.committedAt),
        changeSet: JSON.parse(entry.changeSet) as ParsedChangeSet,
      }));
  }

  async unpublished(limit = 1_000): Promise<OutboxMessage[]> {
    return this.open()
      .outbox.slice(0, Math.max(0, limit))
      .map((message) => ({ ...message, payload: JSON.parse(message.payload) as unknown }));
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

function rowsOf(db: MemoryConfigDatabase, kind: string): Map<string, string> {
  let rows = db.entities.get(kind);
  if (!rows) db.entities.set(kind, (rows = new Map()));
  return rows;
}

function parsed(text: string | undefined): unknown {
  return text === undefined ? undefined : (JSON.parse(text) as unknown);
}
