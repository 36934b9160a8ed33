import type { EventOf } from '../contract/schemas';
import type { Topic } from '../contract/topics';
import type { EventContext } from '../consumer/event-consumer';
import type { EventIdentity } from './event-identity';
import { eventIdentity } from './event-identity';

/** The last revision handled per subject, shared by the members of a consumer group. */
export interface IdempotencyStore {
  /** The last revision recorded for the subject, if any. */
  lastRevision(key: string): Promise<number | undefined>;
  /** Records the revision unless a newer one is there; true if it was recorded. Atomic. */
  record(identity: EventIdentity): Promise<boolean>;
}

export class MemoryIdempotencyStore implements IdempotencyStore {
  private readonly revisions = new Map<string, number>();

  async lastRevision(key: string): Promise<number | undefined> {
    return this.revisions.get(key);
  }

  async record(identity: EventIdentity): Promise<boolean> {
    const last = this.revisions.get(identity.key);
    if (last !== undefined && last >= identity.revision) return false;
    this.revisions.set(identity.key, identity.revision);
    return true;
  }
}

/**
 * A handler that handles each event once: a duplicate or an event older than the last one handled
 * for its subject is skipped. The revision is recorded after the handler resolves, so a crash in
 * between hands the event over again (at least once): the handler itself should be safe to repeat
 * for the same revision.
 */
export function onlyNewer<E extends EventOf[Topic]>(
  store: IdempotencyStore,
  handler: (event: E, context: EventContext) => Promise<void> | void,
): (event: E, context: EventContext) => Promise<void> {
  return async (event, context) => {
    const identity = eventIdentity(event);
    const last = await store.lastRevision(identity.key);
    if (last !== undefined && identity.revision <= last) return;
    await handler(event, context);
    await store.record(identity);
  };
}
