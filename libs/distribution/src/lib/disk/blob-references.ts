import type { FeedEntry } from '../feed';

/** How many files of the latest bundles on one serving path name a blob. */
interface PathCount {
  readonly path: readonly string[];
  count: number;
}

/**
 * Which serving paths the latest bundles reference each blob from: a relay may read the blobs of
 * its subtree's bundles and no others. Paths are the feed log's interned arrays, compared by
 * identity. Most blobs belong to one node, hence to one path: those keep a single count, and only
 * blobs shared across paths get a map (at 100k nodes, a map per blob would cost more than the log).
 */
export class BlobReferences {
  private readonly byDigest = new Map<string, PathCount | Map<readonly string[], PathCount>>();

  add(entry: FeedEntry): void {
    if (!entry.bundle || entry.path.length === 0) return;
    for (const file of entry.bundle.files) {
      const held = this.byDigest.get(file.sha256);
      if (held === undefined) this.byDigest.set(file.sha256, { path: entry.path, count: 1 });
      else if (held instanceof Map) {
        const counted = held.get(entry.path);
        if (counted) counted.count++;
        else held.set(entry.path, { path: entry.path, count: 1 });
      } else if (held.path === entry.path) held.count++;
      else
        this.byDigest.set(
          file.sha256,
          new Map([
            [held.path, held],
            [entry.path, { path: entry.path, count: 1 }],
          ]),
        );
    }
  }

  remove(entry: FeedEntry): void {
    if (!entry.bundle || entry.path.length === 0) return;
    for (const file of entry.bundle.files) {
      const held = this.byDigest.get(file.sha256);
      if (held === undefined) continue;
      const counted =
        held instanceof Map ? held.get(entry.path) : held.path === entry.path ? held : undefined;
      if (!counted || --counted.count > 0) continue;
      if (!(held instanceof Map)) this.byDigest.delete(file.sha256);
      else {
        held.delete(entry.path);
        if (held.size === 0) this.byDigest.delete(file.sha256);
        else if (held.size === 1) this.byDigest.set(file.sha256, held.values().next().value as PathCount);
      }
    }
  }

  /** Whether a latest bundle served through `relayId` (any when null) references the blob. */
  referencedBelow(digest: string, relayId: string | null): boolean {
    const held = this.byDigest.get(digest);
    if (held === undefined) return false;
    if (relayId === null) return true;
    if (!(held instanceof Map)) return held.path.includes(relayId);
    for (const path of held.keys()) if (path.includes(relayId)) return true;
    return false;
  }

  clear(): void {
    this.byDigest.clear();
  }
}
