import type { BundleEntry, NodeResult } from '@policygen/engine';

/**
 * A bundle as it is published: its files as they travel (content only where the cache may lack
 * it), and its manifest by digest. What a computed node keeps until its slice is published: the
 * engine's whole bundle (manifest text and object, rendered parts) is dropped at once, so that
 * the collections running while the slice waits on the bus and the cache do not carry it.
 */
export interface PublishedBundle {
  readonly nodeId: string;
  readonly hash: string;
  readonly manifest: BundleEntry;
  readonly generatedAt: number;
  readonly files: readonly BundleEntry[];
}

/** What one cycle computed for one node, with what publishing it needs. */
export interface NodeOutcome {
  readonly nodeId: string;
  /** Its inputs were unchanged: nothing was computed. */
  readonly skipped: boolean;
  readonly result: NodeResult;
  /** Its bundle, when the engine saw it change (or when asked for). */
  readonly bundle?: PublishedBundle;
  readonly durationMs: number;
  /** The time its bundle was generated at (epoch ms): its `rudder-promises-generated`, and its event's. */
  readonly generatedAt: number;
  /** A consumer asked for this node again: publish its bundle even if the cache holds that hash. */
  readonly forced: boolean;
}
