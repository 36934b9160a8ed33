import type { NodeResult } from '@policygen/engine';

/**
 * A bundle as it is published, made as soon as the node is computed: its file list as the event's
 * JSON text, and the contents the cache may lack as bytes. What a computed node keeps until its
 * slice is published is thus one string and a few buffers, not the engine's bundle (its ~35 file
 * objects, manifest and rendered texts): a slice waits on the bus and the cache for longer than a
 * young-generation collection takes to come, and what it holds then is copied, promoted and
 * collected again from the old generation (the import's cost in the generator, `--trace-gc`).
 */
export interface PublishedBundle {
  readonly nodeId: string;
  readonly hash: string;
  readonly manifestSha256: string;
  readonly generatedAt: number;
  /** `JSON.stringify` of the files as the event lists them (`{ path, sha256 }`, the manifest left out). */
  readonly filesJson: string;
  /** Their digests, in the same order: what the cache's record of the node keeps. */
  readonly digests: readonly string[];
  /** The contents the cache may lack (all of them for a forced node), as UTF-8 bytes, off the JS heap. */
  readonly blobs: readonly { readonly sha256: string; readonly content: Buffer }[];
  /** Files whose contents were not sent: the cache holds them. */
  readonly reused: number;
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
