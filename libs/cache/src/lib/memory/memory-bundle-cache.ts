import type { Blob, BundleCache, NodeBundleRecord, NodeHashEntry } from '../bundle-cache';
import { digestsText, splitDigests } from '../record-digests';

/** What a node holds: its bundle (its digests as the text Redis keeps), or a tombstone. */
type NodeEntry =
  | {
      readonly revision: number;
      readonly hash: string;
      readonly committedAt: string;
      readonly digests: string;
      readonly manifestSha256: string;
    }
  | { readonly revision: number; readonly deleted: true };

/**
 * What a Redis server holds for the bundle cache, in memory: the blobs, a record or tombstone per
 * node, the index of nodes served, and the freshness marker. Several caches may share one, as
 * several generator instances share a Redis.
 */
export class MemoryBundleStore {
  readonly blobs = new Map<string, string>();
  readonly nodes = new Map<string, NodeEntry>();
  /** Node id → hash entry of every node served, in the order they were first served. */
  readonly index = new Map<string, NodeHashEntry>();
  filledAt: string | null = null;
  /** Digest → how many node records name it. */
  readonly references = new Map<string, number>();
  /** Digest → when it was last put or lost its last reference (epoch ms). */
  readonly free = new Map<string, number>();

  /** Forgets everything, as FLUSHALL does to a Redis. */
  flush(): void {
    this.blobs.clear();
    this.nodes.clear();
    this.index.clear();
    this.references.clear();
    this.free.clear();
    this.filledAt = null;
  }

  /** Moves the references of a node from the digests its record named to those its new one names. */
  rereference(before: NodeEntry | undefined, after: NodeEntry | undefined, now: number): void {
    const was = digestsOf(before);
    const is = digestsOf(after);
    for (const digest of is)
      if (!was.has(digest)) this.references.set(digest, (this.references.get(digest) ?? 0) + 1);
    for (const digest of was) {
      if (is.has(digest)) continue;
      const left = (this.references.get(digest) ?? 0) - 1;
      this.references.set(digest, left);
      if (left <= 0) this.free.set(digest, now);
    }
  }
}

export interface MemoryBundleCacheOptions {
  /** Where the cache keeps its entries, e.g. shared with other caches (default: a store of its own). */
  readonly store?: MemoryBundleStore;
}

/**
 * The bundle cache of the embedded default, in memory, with the Redis cache's semantics: blobs
 * stored once, records moving forward only, removals leaving a tombstone that refuses older
 * records, and the freshness marker. Records keep their digests as the text Redis keeps, split on
 * read, so a reader gets a copy, as from Redis. Nothing survives the process.
 */
export class MemoryBundleCache implements BundleCache {
  readonly store: MemoryBundleStore;
  private closed = false;

  constructor(options: MemoryBundleCacheOptions = {}) {
    this.store = options.store ?? new MemoryBundleStore();
  }

  async putBlobs(blobs: readonly Blob[]): Promise<number> {
    const store = this.open();
    let added = 0;
    const now = Date.now();
    for (const blob of blobs) {
      store.free.set(blob.sha256, now);
      if (store.blobs.has(blob.sha256)) continue;
      store.blobs.set(
        blob.sha256,
        typeof blob.content === 'string' ? blob.content : blob.content.toString('utf8'),
      );
      added++;
    }
    return added;
  }

  async getBlob(sha256: string): Promise<string | null> {
    return this.open().blobs.get(sha256) ?? null;
  }

  async getBlobs(sha256s: readonly string[]): Promise<(Buffer | null)[]> {
    const { blobs } = this.open();
    return sha256s.map((sha256) => {
      const content = blobs.get(sha256);
      return content === undefined ? null : Buffer.from(content);
    });
  }

  async recordBundles(bundles: readonly NodeBundleRecord[]): Promise<boolean[]> {
    const store = this.open();
    // Serialised first: a bundle that cannot be is refused before anything is written.
    const entries = bundles.map((bundle) => ({
      nodeId: bundle.nodeId,
      entry: {
        revision: bundle.revision,
        hash: bundle.hash,
        committedAt: bundle.committedAt,
        digests: digestsText(bundle),
        manifestSha256: bundle.manifestSha256,
      },
    }));
    const now = Date.now();
    return entries.map(({ nodeId, entry }) => {
      if (!movesForward(store, nodeId, entry.revision)) return false;
      store.rereference(store.nodes.get(nodeId), entry, now);
      store.nodes.set(nodeId, entry);
      store.index.set(nodeId, { revision: entry.revision, hash: entry.hash });
      return true;
    });
  }

  async removeNodes(
    nodes: readonly { readonly nodeId: string; readonly revision: number }[],
  ): Promise<boolean[]> {
    const store = this.open();
    const now = Date.now();
    return nodes.map(({ nodeId, revision }) => {
      if (!movesForward(store, nodeId, revision)) return false;
      const tombstone = { revision, deleted: true } as const;
      store.rereference(store.nodes.get(nodeId), tombstone, now);
      store.nodes.set(nodeId, tombstone);
      store.index.delete(nodeId);
      return true;
    });
  }

  async nodeBundle(nodeId: string): Promise<NodeBundleRecord | null> {
    const entry = this.open().nodes.get(nodeId);
    if (!entry || 'deleted' in entry || !entry.hash) return null;
    return {
      nodeId,
      hash: entry.hash,
      revision: entry.revision,
      committedAt: entry.committedAt,
      digests: splitDigests(entry.digests),
      manifestSha256: entry.manifestSha256,
    };
  }

  async nodeHashes(nodeIds?: readonly string[]): Promise<Map<string, NodeHashEntry>> {
    const { index } = this.open();
    const hashes = new Map<string, NodeHashEntry>();
    for (const nodeId of nodeIds ?? index.keys()) {
      const entry = index.get(nodeId);
      if (entry) hashes.set(nodeId, { ...entry });
    }
    return hashes;
  }

  async collectBlobs(options: {
    readonly unreferencedBefore: number;
    readonly limit?: number;
  }): Promise<number> {
    const store = this.open();
    let collected = 0;
    for (const [digest, since] of [...store.free]) {
      if (collected >= (options.limit ?? 10_000)) break;
      if (since >= options.unreferencedBefore) continue;
      store.free.delete(digest);
      if ((store.references.get(digest) ?? 0) > 0) continue;
      store.references.delete(digest);
      if (store.blobs.delete(digest)) collected++;
    }
    return collected;
  }

  async claimFreshness(): Promise<boolean> {
    const store = this.open();
    if (store.filledAt !== null) return false;
    store.filledAt = new Date().toISOString();
    return true;
  }

  async ping(): Promise<void> {
    this.open();
  }

  /** Closes this cache; its store stays, for the other caches that share it. */
  async close(): Promise<void> {
    this.closed = true;
  }

  private open(): MemoryBundleStore {
    if (this.closed) throw new Error('the bundle cache is closed');
    return this.store;
  }
}

function digestsOf(entry: NodeEntry | undefined): Set<string> {
  if (!entry || 'deleted' in entry) return new Set();
  const digests = new Set(splitDigests(entry.digests));
  if (entry.manifestSha256) digests.add(entry.manifestSha256);
  return digests;
}

/** A node's record or tombstone is replaced only by one at the same revision or a newer one. */
function movesForward(store: MemoryBundleStore, nodeId: string, revision: number): boolean {
  const held = store.nodes.get(nodeId);
  return !held || held.revision <= revision;
}
