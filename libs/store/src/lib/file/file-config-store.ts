import type { ParsedChangeSet } from '@policygen/engine';
import { TOPICS } from '@policygen/events';
import type {
  ChangeToCommit,
  CommitOptions,
  CommittedChange,
  OutboxMessage,
  RevisionRecord,
  StoreSnapshot,
} from '../config-store';
import { DEFAULT_MAX_EVENT_BYTES } from '../entity-rows';
import { MemoryConfigDatabase, MemoryConfigStore } from '../memory/memory-config-store';
import type { JournalRecovery } from './journal';
import { Journal, Turns } from './journal';

/** A journal record: a commit (one or several change sets, all or none), or messages published. */
type ConfigRecord =
  | {
      readonly type: 'commit';
      /** The revision of its first change set: a replay that gives another has diverged. */
      readonly revision: number;
      readonly committedAt: string;
      readonly topic: string;
      readonly maxEventBytes: number;
      readonly changes: readonly {
        readonly changeSet: ParsedChangeSet;
        readonly author: string | null;
        readonly reason: string | null;
      }[];
    }
  | { readonly type: 'published'; readonly ids: readonly number[] };

/**
 * The tables of the file store: the memory store's, rebuilt at opening by replaying a journal
 * (`Journal`) of every commit and every publication. Stores opened on one database share its
 * tables and take their turn to commit, as connections to one database do.
 */
export class FileConfigDatabase {
  readonly tables = new MemoryConfigDatabase();
  private loading: Promise<Journal> | undefined;
  private recovered: JournalRecovery | null = null;
  private readonly commits = new Turns();

  constructor(readonly file: string) {}

  /** What opening the journal found: null until it is open. */
  get recovery(): JournalRecovery | null {
    return this.recovered;
  }

  /** Opens the journal and replays it, once. */
  open(): Promise<Journal> {
    this.loading ??= this.replay();
    return this.loading;
  }

  /** Runs a commit once those before it are done: the revision it checks stays current meanwhile. */
  inTurn<T>(commit: () => Promise<T>): Promise<T> {
    return this.commits.run(commit);
  }

  async close(): Promise<void> {
    if (!this.loading) return;
    const journal = await this.loading.catch(() => null);
    await this.commits.idle();
    await journal?.close();
  }

  private async replay(): Promise<Journal> {
    const { journal, records, recovery } = await Journal.open<ConfigRecord>(this.file);
    const tables = this.tables;
    for (const record of records) {
      if (record.type === 'published') {
        await new MemoryConfigStore({ database: tables }).markPublished(record.ids);
        continue;
      }
      const store = new MemoryConfigStore({
        database: tables,
        changeTopic: record.topic,
        maxEventBytes: record.maxEventBytes,
      });
      const [first] = await store.commitAll(record.changes, { committedAt: new Date(record.committedAt) });
      if (first?.revision !== record.revision) {
        await journal.close();
        throw new Error(
          `${this.file}: a commit journaled at revision ${record.revision} replays at revision ${first?.revision}: the journal is damaged`,
        );
      }
    }
    this.recovered = recovery;
    return journal;
  }
}

export interface FileConfigStoreOptions {
  /** The journal's file (the store then owns its database), or */
  readonly file?: string;
  /** a database shared with other stores. */
  readonly database?: FileConfigDatabase;
  /** Where the outbox sends change events (default `policygen.config.changes.v1`). */
  readonly changeTopic?: string;
  /** The largest change set an event carries, as JSON bytes (default 900 KiB). */
  readonly maxEventBytes?: number;
}

/**
 * The config store of the embedded mode with a data directory: the memory store's semantics, and
 * every commit journaled to a file and flushed to the disk before it is applied and acknowledged.
 * So a commit the API acknowledged survives a `kill -9` or a power cut, and one it did not is
 * either whole or absent. Publications are journaled unflushed: one lost to a crash is published
 * again (a duplicate its revision makes recognisable).
 */
export class FileConfigStore extends MemoryConfigStore {
  readonly journalDatabase: FileConfigDatabase;
  private readonly owned: boolean;
  private readonly topic: string;
  private readonly eventBytes: number;
  private shut = false;

  constructor(options: FileConfigStoreOptions) {
    const database = options.database ?? (options.file ? new FileConfigDatabase(options.file) : null);
    if (!database) throw new Error('a file config store needs a file or a database');
    const topic = options.changeTopic ?? TOPICS.configChanges;
    const eventBytes = options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
    super({ database: database.tables, changeTopic: topic, maxEventBytes: eventBytes });
    this.journalDatabase = database;
    this.owned = options.database === undefined;
    this.topic = topic;
    this.eventBytes = eventBytes;
  }

  override async migrate(): Promise<void> {
    await this.opened();
  }

  override async snapshot(): Promise<StoreSnapshot> {
    await this.opened();
    return super.snapshot();
  }

  override async commitAll(
    changes: readonly ChangeToCommit[],
    options: CommitOptions = {},
  ): Promise<CommittedChange[]> {
    const journal = await this.opened();
    return this.journalDatabase.inTurn(() =>
      super.commitAll(changes, {
        ...options,
        beforeApply: (committed) =>
          journal.append(
            {
              type: 'commit',
              revision: committed[0]?.revision ?? 0,
              committedAt: (committed[0]?.committedAt ?? new Date()).toISOString(),
              topic: this.topic,
              maxEventBytes: this.eventBytes,
              changes: committed.map(({ changeSet, author, reason }) => ({ changeSet, author, reason })),
            } satisfies ConfigRecord,
            { durable: true },
          ),
      }),
    );
  }

  override async changesSince(revision: number, limit?: number): Promise<CommittedChange[]> {
    await this.opened();
    return super.changesSince(revision, limit);
  }

  override async revisions(after: number, limit: number): Promise<RevisionRecord[]> {
    await this.opened();
    return super.revisions(after, limit);
  }

  override async unpublished(limit?: number, after?: number): Promise<OutboxMessage[]> {
    await this.opened();
    return super.unpublished(limit, after);
  }

  override async markPublished(ids: readonly number[]): Promise<void> {
    const journal = await this.opened();
    if (ids.length === 0) return;
    await journal.append({ type: 'published', ids } satisfies ConfigRecord, { durable: false });
    await super.markPublished(ids);
  }

  override async unpublishedCount(): Promise<number> {
    await this.opened();
    return super.unpublishedCount();
  }

  override async ping(): Promise<void> {
    await this.opened();
  }

  /** Closes this store, and its journal when it opened it itself. */
  override async close(): Promise<void> {
    this.shut = true;
    await super.close();
    if (this.owned) await this.journalDatabase.close();
  }

  private opened(): Promise<Journal> {
    if (this.shut) return Promise.reject(new Error('the config store is closed'));
    return this.journalDatabase.open();
  }
}
