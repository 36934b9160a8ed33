import type { Fleet, ParsedChangeSet } from '@policygen/engine';
import type { ChangeCounts } from './change-counts';
import { changeCounts } from './change-counts';
import type { EntityRevisions } from './entity-revisions';

/** A revision of the change log as the audit trail shows it: who, when, why, and how much changed. */
export interface RevisionRecord {
  readonly revision: number;
  readonly committedAt: Date;
  /**
   * Who committed it (an API token's name, or `anonymous`); null when nobody was recorded: a
   * revision committed before authors were, or straight to the store.
   */
  readonly author: string | null;
  /** Why, as the author said; null when not said. */
  readonly reason: string | null;
  /** Entities upserted and deleted, kind by kind. */
  readonly counts: ChangeCounts;
}

/** A committed change set: the unit of the change log, at its gap-free revision. */
export interface CommittedChange extends RevisionRecord {
  readonly changeSet: ParsedChangeSet;
  /**
   * The outbox message the commit wrote, as the store holds it, given by the commit itself: its
   * publisher sends it without reading it back. Absent from changes read from the log.
   */
  readonly outboxMessage?: OutboxMessage;
}

/** Who commits a change set, and why. */
export interface Attribution {
  readonly author?: string | null;
  readonly reason?: string | null;
}

/** One change set to commit, with its attribution. */
export interface ChangeToCommit extends Attribution {
  readonly changeSet: ParsedChangeSet;
}

/** The whole configuration at a revision, and the revision each entity was last written at. */
export interface StoreSnapshot {
  readonly revision: number;
  readonly fleet: Fleet;
  readonly entityRevisions: EntityRevisions;
}

/** A message written in the same transaction as the change it announces, then sent by a publisher. */
export interface OutboxMessage {
  readonly id: number;
  readonly topic: string;
  readonly key: string;
  /** The message as stored: JSON text, sent as it is. */
  readonly value: string;
  /** `value` parsed (on first read). */
  readonly payload: unknown;
}

/** An outbox message of the text a store holds; its payload is parsed only if it is read. */
export function outboxMessage(id: number, topic: string, key: string, value: string): OutboxMessage {
  let parsed: { readonly payload: unknown } | undefined;
  const message = { id, topic, key, value } as OutboxMessage;
  Object.defineProperty(message, 'payload', {
    enumerable: true,
    get: () => (parsed ??= { payload: JSON.parse(value) as unknown }).payload,
  });
  return message;
}

/**
 * What a commit may carry besides its change sets: the outbox messages a publisher sent since the
 * last commit, marked published in the same round trip (whether or not the commit's expected
 * revision holds: a sent message is published either way).
 */
export interface CommitOptions {
  readonly expectedRevision?: number;
  readonly markPublished?: readonly number[];
}

/** The expected revision was not the current one: someone committed in between. */
export class RevisionConflictError extends Error {
  override readonly name = 'RevisionConflictError';

  constructor(
    readonly expected: number,
    readonly current: number,
  ) {
    super(`the configuration is at revision ${current}, not ${expected}`);
  }
}

/**
 * The configuration's system of record (architecture.md): entities, a gap-free revision per
 * committed change set, the change log, and the transactional outbox. It persists what it is
 * given; validating a change set against the configuration is the engine's job, before `commit`.
 */
export interface ConfigStore {
  /** Creates or upgrades the tables. */
  migrate(): Promise<void>;
  /** The whole configuration at its current revision, read in one transaction. */
  snapshot(): Promise<StoreSnapshot>;
  /**
   * Commits a change set at the next revision, with its change-log row (author, reason, counts)
   * and its outbox message, all or nothing. With `expectedRevision`, fails with
   * `RevisionConflictError` unless that is current.
   */
  commit(changeSet: ParsedChangeSet, options?: Attribution & CommitOptions): Promise<CommittedChange>;
  /**
   * Commits change sets at consecutive revisions, in order, in one transaction: all or none. With
   * `expectedRevision`, fails with `RevisionConflictError` unless that is current before the first.
   */
  commitAll(changes: readonly ChangeToCommit[], options?: CommitOptions): Promise<CommittedChange[]>;
  /** Committed change sets after `revision`, in order. */
  changesSince(revision: number, limit?: number): Promise<CommittedChange[]>;
  /** At most `limit` revisions after `after`, oldest first, without their change sets (a page of the audit trail). */
  revisions(after: number, limit: number): Promise<RevisionRecord[]>;
  /** One revision with its change set; undefined when there is no such revision. */
  revision(revision: number): Promise<CommittedChange | undefined>;
  /** Outbox messages not published yet, oldest first; with `after`, only those of a greater id. */
  unpublished(limit?: number, after?: number): Promise<OutboxMessage[]>;
  markPublished(ids: readonly number[]): Promise<void>;
  /** Outbox messages not published yet (the backlog the publisher has to send). */
  unpublishedCount(): Promise<number>;
  /** Resolves when the store answers; rejects saying why not (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** The record of a change set committed at `revision`, as every store keeps it. */
export function revisionRecord(
  revision: number,
  committedAt: Date,
  changeSet: ParsedChangeSet,
  author: string | null | undefined,
  reason: string | null | undefined,
): RevisionRecord {
  return {
    revision,
    committedAt,
    author: author ?? null,
    reason: reason ?? null,
    counts: changeCounts(changeSet),
  };
}
