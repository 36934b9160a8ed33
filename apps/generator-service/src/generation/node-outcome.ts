import type { BundleEntry, NodeBundle, NodeRegeneration } from '@policygen/engine';

/** What one cycle computed for one node, with what publishing it needs. */
export interface NodeOutcome {
  readonly nodeId: string;
  readonly regeneration: NodeRegeneration<BundleEntry>;
  /**
   * Its whole bundle, when the engine saw it change (or when asked for); files the cache holds
   * already may come without content.
   */
  readonly bundle?: NodeBundle<BundleEntry>;
  readonly durationMs: number;
  /** The time its bundle was generated at (epoch ms): its `rudder-promises-generated`, and its event's. */
  readonly generatedAt: number;
  /** A consumer asked for this node again: publish its bundle even if the cache holds that hash. */
  readonly forced: boolean;
}
