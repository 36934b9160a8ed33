/** A file's content, addressed by its SHA-256 (lowercase hex). */
export interface Blob {
  readonly sha256: string;
  /** The file's text, or its UTF-8 bytes. */
  readonly content: string | Buffer;
}

/** The bundle a node is served: its hash, the revision it was generated at, its files by digest. */
export interface NodeBundleRecord {
  readonly nodeId: string;
  readonly hash: string;
  readonly revision: number;
  /** When that revision was committed (ISO 8601). */
  readonly committedAt: string;
  /**
   * The digests of the bundle's files but the manifest, in the order of their paths (one twice when
   * two files hold the same content): the blobs the record keeps from being collected. A record
   * holds digests, not the file list: nothing reads the list from the cache (the consumers have it
   * from the event), and its text was most of what a record cost to send, store and count.
   */
  readonly digests: readonly string[];
  /** The digest of the bundle's `policy-manifest.json`, a blob like the other files. */
  readonly manifestSha256: string;
}

/** What the cache holds of a node: the hash it is served and the revision that produced it. */
export interface NodeHashEntry {
  readonly hash: string;
  readonly revision: number;
}

/**
 * The generator's shared state (architecture.md): file contents stored once however many nodes
 * share them, and each node's current bundle. Records move forward only: a write at an older
 * revision than the one held is refused, so a slower instance cannot undo a newer bundle.
 */
export interface BundleCache {
  /** Stores the blobs not stored yet; resolves with how many were new. */
  putBlobs(blobs: readonly Blob[]): Promise<number>;
  getBlob(sha256: string): Promise<string | null>;
  /**
   * Several blobs in one round trip, in the order asked, as their UTF-8 bytes (a copy to disk need
   * not decode them); null for each one not stored.
   */
  getBlobs(sha256s: readonly string[]): Promise<(Buffer | null)[]>;
  /** Records each bundle unless the node holds a newer revision; says, per bundle, whether it did. */
  recordBundles(bundles: readonly NodeBundleRecord[]): Promise<boolean[]>;
  /** Removes nodes (at the revision that removed them) unless they hold a newer one. */
  removeNodes(nodes: readonly { readonly nodeId: string; readonly revision: number }[]): Promise<boolean[]>;
  nodeBundle(nodeId: string): Promise<NodeBundleRecord | null>;
  /** The hash of every node served (or of the nodes named), by node id; absent when none. */
  nodeHashes(nodeIds?: readonly string[]): Promise<Map<string, NodeHashEntry>>;
  /**
   * Deletes blobs that no node's record names and that nobody put since `unreferencedBefore` (epoch
   * ms), at most `limit` of them (default 10,000); resolves with how many went (fewer than `limit`:
   * nothing more is due). A blob is referenced
   * from the moment a record naming it is written until the last such record is replaced or
   * removed; a put counts as a use, so a blob put for a record not written yet stays until then.
   */
  collectBlobs(options: { readonly unreferencedBefore: number; readonly limit?: number }): Promise<number>;
  /**
   * Sets the marker that this cache has been filled, if it is missing; true when it was missing,
   * i.e. the cache is new or was flushed and every bundle must be written again.
   */
  claimFreshness(): Promise<boolean>;
  /** Resolves when the cache answers; rejects saying why not (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}
