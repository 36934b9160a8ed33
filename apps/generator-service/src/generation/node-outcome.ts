import type { NodeBundle, NodeRegeneration } from '@policygen/engine';

/** What one cycle computed for one node, with what publishing it needs. */
export interface NodeOutcome {
  readonly nodeId: string;
  readonly regeneration: NodeRegeneration;
  /** Its whole bundle, when the engine saw it change (or when asked for). */
  readonly bundle?: NodeBundle;
  readonly durationMs: number;
  /** A consumer asked for this node again: publish its bundle even if the cache holds that hash. */
  readonly forced: boolean;
}
