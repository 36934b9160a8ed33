import { Inject, Injectable, Logger } from '@nestjs/common';
import type { OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { FleetIndex, replacementChangeSet, sortedFleet, validateChangeSet } from '@policygen/engine';
import type { Fleet, ParsedChangeSet, ValidationIssue } from '@policygen/engine';
import { RevisionConflictError, SETTINGS } from '@policygen/store';
import type { CommittedChange, ConfigStore, EntityRevisions } from '@policygen/store';
import type { ServiceTimings } from '../app/config-service-options';
import { CONFIG_STORE, SERVICE_TIMINGS } from '../app/tokens';
import { preconditionFailed, unavailable } from '../http/api-errors';
import { ifMatchAccepts } from '../http/if-match';
import { OutboxService } from '../outbox/outbox.service';
import { SerialQueue } from './serial-queue';

/** The configuration at a revision; read it synchronously, it moves on with the next commit. */
export interface ConfigState {
  readonly revision: number;
  readonly index: FleetIndex;
  /** The revision each entity was last written at: its ETag. */
  readonly entityRevisions: EntityRevisions;
}

/** One entity as the store keeps it (kind and key, see the store's `entity-rows.ts`), and its name in messages. */
export interface EntityRef {
  readonly kind: string;
  readonly key: string;
  /** `node n1`, `the settings`. */
  readonly name: string;
}

/** What every write request carries besides its change: its precondition and its attribution. */
export interface WriteRequest {
  /** The request's `If-Match` header: the revision the client expects to change. */
  readonly ifMatch?: string | undefined;
  /** Who makes the change: the principal's name, or `anonymous`. */
  readonly author: string;
  /** Why, when the request says. */
  readonly reason: string | null;
}

/** One change to the configuration, as a request asks for it. */
export type Mutation = WriteRequest & {
  /**
   * The one entity the change is about, when it is: `ifMatch` is then compared with that entity's
   * own revision, so that changes to other entities never fail it. Without it, with the global one.
   */
  readonly entity?: EntityRef;
} & (
    | {
        /** The change set to commit, built against the configuration it will apply to; throws to refuse. */
        build(state: ConfigState): unknown;
        /** The error to answer with when the validator refuses the change set. */
        refuse(issues: readonly ValidationIssue[]): Error;
      }
    | {
        /**
         * The whole configuration, a fleet `validateFleet` accepted (an import): valid whole, it
         * replaces any configuration without being parsed again, and the index after the commit is
         * built from it rather than read back from the store.
         */
        readonly replaceWith: Fleet;
      }
  );

/**
 * How long one mutation keeps trying while other instances commit first. Each lost try means
 * another commit went through, so the log moves on; a mutation only waits out a busy writer.
 */
const RETRY_WINDOW_MS = 10_000;

/** Past this many nodes upserted or deleted, the index is built anew rather than updated. */
const REBUILD_ABOVE_NODES = 1_000;

function nodesTouched(changeSet: ParsedChangeSet): number {
  return changeSet.upsert.nodes.length + changeSet.delete.nodes.length;
}

/** Mutations committed together at most, in one transaction. */
const MAX_GROUP = 200;

interface WaitingMutation {
  readonly mutation: Mutation;
  readonly resolve: (committed: CommittedChange) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * The configuration in memory, at the store's revision, and the one way to change it: mutations run
 * one at a time; each is validated by the engine against the configuration it applies to and
 * committed only if the store is still at that revision. When another instance committed first,
 * its changes are applied here and the mutation is validated again. Mutations that arrive while a
 * commit is under way are committed together next, each at its own revision in one transaction
 * (group commit): a burst costs one round of the database, not one per request.
 */
@Injectable()
export class ConfigStateService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(ConfigStateService.name);
  private readonly queue = new SerialQueue();
  private waiting: WaitingMutation[] = [];
  private state: ConfigState | undefined;
  private followTimer: NodeJS.Timeout | undefined;
  private closing = false;
  private readonly commitListeners: ((count: number, revision: number) => void)[] = [];

  constructor(
    @Inject(CONFIG_STORE) private readonly store: ConfigStore,
    @Inject(OutboxService) private readonly outbox: OutboxService,
    @Inject(SERVICE_TIMINGS) private readonly timings: ServiceTimings,
  ) {}

  async onModuleInit(): Promise<void> {
    await this.reload();
    this.followTimer = setInterval(() => {
      if (this.queue.idle) void this.queue.run(() => this.follow());
    }, this.timings.followIntervalMs);
    this.followTimer.unref();
  }

  async onModuleDestroy(): Promise<void> {
    this.closing = true;
    clearInterval(this.followTimer);
    await this.queue.drained();
  }

  /** Told of this instance's commits: how many change sets, and the revision reached. */
  onCommitted(listener: (count: number, revision: number) => void): void {
    this.commitListeners.push(listener);
  }

  private committed(count: number): void {
    if (count === 0) return;
    const revision = this.current.revision;
    for (const listener of this.commitListeners) listener(count, revision);
  }

  get current(): ConfigState {
    if (!this.state) throw new Error('the configuration is not loaded yet');
    return this.state;
  }

  /** The entity's own revision (its ETag); undefined when it does not exist. */
  revisionOf(entity: EntityRef, state: ConfigState = this.current): number | undefined {
    // The settings always exist, at their defaults until first written (revision 0).
    return state.entityRevisions.of(entity.kind, entity.key) ?? (entity.kind === SETTINGS ? 0 : undefined);
  }

  /**
   * Runs `read` on the configuration between two commits, never during one (a group commit applies
   * its change sets to the index before the store has them): for reads that take a while.
   */
  readConsistent<T>(read: (state: ConfigState) => T): Promise<T> {
    return this.queue.run(async () => read(this.current));
  }

  mutate(mutation: Mutation): Promise<CommittedChange> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ mutation, resolve, reject });
      if (this.waiting.length === 1) void this.queue.run(() => this.commitWaiting());
    });
  }

  private async commitWaiting(): Promise<void> {
    const group = this.waiting.splice(0, MAX_GROUP);
    if (this.waiting.length > 0) void this.queue.run(() => this.commitWaiting());
    if (group.length === 0) return;
    if (this.closing) {
      for (const waiting of group) waiting.reject(unavailable('the service is shutting down'));
      return;
    }
    if (group.length === 1) {
      const [only] = group as [WaitingMutation];
      await this.commitOne(only.mutation).then(only.resolve, only.reject);
      return;
    }
    await this.commitGroup(group);
  }

  /**
   * Validates each mutation against the configuration the ones before it make, applying it to the
   * index as it goes, then commits them all at once. Should the commit fail, the index holds what
   * was not committed: it is loaded again from the store. A refused mutation takes the one-by-one
   * way, which catches up with other instances before it answers.
   */
  private async commitGroup(group: readonly WaitingMutation[]): Promise<void> {
    const deadline = Date.now() + RETRY_WINDOW_MS;
    while (Date.now() < deadline) {
      const { revision: base, index, entityRevisions } = this.current;
      const accepted: { waiting: WaitingMutation; change: ParsedChangeSet }[] = [];
      const refused: WaitingMutation[] = [];
      try {
        for (const waiting of group) {
          const prepared = this.prepare(waiting.mutation, {
            revision: base + accepted.length,
            index,
            entityRevisions,
          });
          if ('refusal' in prepared) refused.push(waiting);
          else {
            // Applied as accepted, so that the next mutations of the group are checked against
            // it (an If-Match on an entity an earlier one changed fails); undone by a reload.
            index.apply(prepared.change);
            accepted.push({ waiting, change: prepared.change });
            entityRevisions.record(base + accepted.length, prepared.change);
          }
        }
        const committed = await this.commitMarking((markPublished) =>
          this.store.commitAll(
            accepted.map(({ waiting, change }) => ({
              changeSet: change,
              author: waiting.mutation.author,
              reason: waiting.mutation.reason,
            })),
            { expectedRevision: base, markPublished },
          ),
        );
        this.state = { revision: base + committed.length, index, entityRevisions };
        if (committed.length > 0) this.outbox.committed(committed);
        for (const change of committed) this.logCommit(change);
        this.committed(committed.length);
        accepted.forEach(({ waiting }, position) => waiting.resolve(committed[position] as CommittedChange));
      } catch (error) {
        await this.reload();
        if (error instanceof RevisionConflictError) continue;
        for (const waiting of group) waiting.reject(error);
        return;
      }
      for (const waiting of refused)
        await this.commitOne(waiting.mutation).then(waiting.resolve, waiting.reject);
      return;
    }
    for (const waiting of group)
      waiting.reject(unavailable('other instances keep committing first; try again'));
  }

  private async commitOne(mutation: Mutation): Promise<CommittedChange> {
    const deadline = Date.now() + RETRY_WINDOW_MS;
    let refusedBefore = false;
    while (Date.now() < deadline) {
      const { revision } = this.current;
      const prepared = this.prepare(mutation);
      if ('refusal' in prepared) {
        // Refused against what may be an old configuration: another instance may have committed
        // what makes it right. Once caught up, a refusal is the answer.
        if (!refusedBefore && (await this.caughtUp(revision))) {
          refusedBefore = true;
          continue;
        }
        throw prepared.refusal;
      }
      try {
        const committed = await this.commitMarking((markPublished) =>
          this.store.commit(prepared.change, {
            expectedRevision: revision,
            author: mutation.author,
            reason: mutation.reason,
            markPublished,
          }),
        );
        await this.advance(committed, 'replaceWith' in mutation ? mutation.replaceWith : undefined);
        this.outbox.committed([committed]);
        this.logCommit(committed);
        this.committed(1);
        return committed;
      } catch (error) {
        if (!(error instanceof RevisionConflictError)) throw error;
        await this.follow();
      }
    }
    throw unavailable('other instances keep committing first; try again');
  }

  /**
   * A commit that also marks what the outbox sent since the last one: one round trip for both. A
   * revision conflict still marked them (the statement ran); any other failure gives them back.
   */
  private async commitMarking<T>(commit: (markPublished: readonly number[]) => Promise<T>): Promise<T> {
    const marks = this.outbox.takeMarks();
    try {
      const committed = await commit(marks);
      this.outbox.markedByCommit(marks);
      return committed;
    } catch (error) {
      if (error instanceof RevisionConflictError) this.outbox.markedByCommit(marks);
      else this.outbox.giveBack(marks);
      throw error;
    }
  }

  /** The mutation's change set, validated against a configuration (the current one), or why it is refused. */
  private prepare(
    mutation: Mutation,
    state: ConfigState = this.current,
  ): { change: ParsedChangeSet } | { refusal: unknown } {
    const { revision, index } = state;
    const expected = mutation.entity ? this.revisionOf(mutation.entity, state) : revision;
    if (!ifMatchAccepts(mutation.ifMatch, expected))
      return { refusal: preconditionFailed(mutation.ifMatch ?? '', expected, mutation.entity?.name) };
    if ('replaceWith' in mutation) return { change: replacementChangeSet(index, mutation.replaceWith) };
    try {
      const validation = validateChangeSet(mutation.build(state), index);
      return validation.ok ? { change: validation.change } : { refusal: mutation.refuse(validation.issues) };
    } catch (refusal) {
      return { refusal };
    }
  }

  private async caughtUp(revision: number): Promise<boolean> {
    await this.follow();
    return this.current.revision !== revision;
  }

  /** Applies what other instances committed since our revision. */
  private async follow(): Promise<void> {
    try {
      for (;;) {
        const changes = await this.store.changesSince(this.current.revision);
        if (changes.length === 0) return;
        for (const change of changes) await this.advance(change);
      }
    } catch (error) {
      this.logger.warn(`could not catch up with the store: ${(error as Error).message}`);
    }
  }

  /** One structured line per revision committed here: who, why, how much; never a value. */
  private logCommit(change: CommittedChange): void {
    const { revision, author, reason, counts } = change;
    this.logger.log({ msg: 'revision committed', revision, author, reason, counts });
  }

  /** Moves the configuration to a committed change; `replacedWith`: the fleet an import committed is. */
  private async advance(change: CommittedChange, replacedWith?: Fleet): Promise<void> {
    const { revision, index, entityRevisions } = this.current;
    try {
      if (change.revision !== revision + 1)
        throw new Error(`revision ${change.revision} does not follow ${revision}`);
      if (nodesTouched(change.changeSet) > REBUILD_ABOVE_NODES) {
        // An import: building the index anew is several times faster than applying thousands of
        // nodes one by one (10k nodes: ~1.5 s against ~8.5 s), and from the fleet just committed
        // faster than from the store, which would read and parse it back.
        if (!replacedWith) return await this.reload();
        entityRevisions.record(change.revision, change.changeSet);
        this.state = {
          revision: change.revision,
          index: FleetIndex.build(sortedFleet(replacedWith)),
          entityRevisions,
        };
        return;
      }
      index.apply(change.changeSet);
      entityRevisions.record(change.revision, change.changeSet);
      this.state = { revision: change.revision, index, entityRevisions };
    } catch (error) {
      // The index may be half-updated: start again from the store's snapshot.
      this.logger.error(`could not apply revision ${change.revision}: ${(error as Error).message}`);
      await this.reload();
    }
  }

  private async reload(): Promise<void> {
    const snapshot = await this.store.snapshot();
    this.state = {
      revision: snapshot.revision,
      index: FleetIndex.build(snapshot.fleet),
      entityRevisions: snapshot.entityRevisions,
    };
    this.logger.log(`configuration loaded at revision ${snapshot.revision}`);
  }
}
