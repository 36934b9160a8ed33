import type { Fleet, ParsedChangeSet } from '@policygen/engine';

/** A committed change set: the unit of the change log, at its gap-free revision. */
export interface CommittedChange {
  readonly revision: number;
  readonly committedAt: Date;
  readonly changeSet: ParsedChangeSet;
}

/** A message written in the same transaction as the change it announces, then sent by a publisher. */
export interface OutboxMessage {
  readonly id: number;
  readonly topic: string;
  readonly key: string;
  readonly payload: unknown;
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
  snapshot(): Promise<{ readonly revision: number; readonly fleet: Fleet }>;
  /**
   * Commits a change set at the next revision, with its change-log row and its outbox message, all
   * or nothing. With `expectedRevision`, fails with `RevisionConflictError` unless that is current.
   */
  commit(
    changeSet: ParsedChangeSet,
    options?: { readonly expectedRevision?: number },
  ): Promise<CommittedChange>;
  /**
   * Commits change sets at consecutive revisions, in order, in one transaction: all or none. With
   * `expectedRevision`, fails with `RevisionConflictError` unless that is current before the first.
   */
  commitAll(
    changeSets: readonly ParsedChangeSet[],
    options?: { readonly expectedRevision?: number },
  ): Promise<CommittedChange[]>;
  /** Committed change sets after `revision`, in order. */
  changesSince(revision: number, limit?: number): Promise<CommittedChange[]>;
  /** Outbox messages not published yet, oldest first. */
  unpublished(limit?: number): Promise<OutboxMessage[]>;
  markPublished(ids: readonly number[]): Promise<void>;
  /** Outbox messages not published yet (the backlog the publisher has to send). */
  unpublishedCount(): Promise<number>;
  /** Resolves when the store answers; rejects saying why not (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}
