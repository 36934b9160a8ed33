import type { EventOf } from '../contract/schemas';
import type { Topic } from '../contract/topics';
import { CONFIG_CHANGES_KEY } from '../contract/topics';

/**
 * What makes an event the same as another, and which of two is newer: its subject (the node, the
 * relay and node, or the configuration) and the configuration revision it is about. Delivery is at
 * least once: an event whose revision is not above the last one handled for its subject is a
 * duplicate or outdated.
 */
export interface EventIdentity {
  /** The subject, prefixed with the event's type: events of different types never shadow each other. */
  readonly key: string;
  readonly revision: number;
}

type AnyEvent = EventOf[Topic];

export function eventIdentity(event: AnyEvent): EventIdentity {
  switch (event.type) {
    case 'config.change':
      return { key: `config.change:${CONFIG_CHANGES_KEY}`, revision: event.revision };
    case 'distribution.confirmed':
    case 'node.fetched':
      return { key: `${event.type}:${event.relayId}/${event.nodeId}`, revision: event.revision };
    case 'node.bundle':
    case 'node.deleted':
      // One subject: a node's deletion is newer than its bundles of earlier revisions.
      return { key: `node:${event.nodeId}`, revision: event.revision };
    case 'generation.summary':
    case 'distribution.summary':
      // A batch, not a subject's state: the same summary again is a duplicate, another one is not.
      return { key: `${event.type}:${event.batchId}`, revision: event.revision };
    default:
      return { key: `${event.type}:${event.nodeId}`, revision: event.revision };
  }
}

/** True if `candidate` should be handled after `last` (the last handled of the same subject, if any). */
export function isNewer(candidate: EventIdentity, last: EventIdentity | number | undefined): boolean {
  if (last === undefined) return true;
  if (typeof last === 'number') return candidate.revision > last;
  if (last.key !== candidate.key) throw new Error(`not the same subject: ${candidate.key} and ${last.key}`);
  return candidate.revision > last.revision;
}
