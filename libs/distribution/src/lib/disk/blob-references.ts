import type { FeedEntry, FeedFile } from '../feed';

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

  /** How many files of the latest bundles served nowhere name each blob (the root keeps those too). */
  private readonly unserved = new Map<string, number>();

  /** Counts the entry's files; `fresh` is given the digests no served bundle named before. */
  add(entry: FeedEntry, fresh?: string[]): void {
    if (!entry.bundle) return;
    if (entry.path.length === 0)
      for (const file of entry.bundle.files)
        this.unserved.set(file.sha256, (this.unserved.get(file.sha256) ?? 0) + 1);
    else for (const file of entry.bundle.files) this.addDigest(file.sha256, entry.path, fresh);
  }

  remove(entry: FeedEntry): void {
    if (!entry.bundle) return;
    if (entry.path.length === 0)
      for (const file of entry.bundle.files) {
        const count = (this.unserved.get(file.sha256) ?? 0) - 1;
        if (count > 0) this.unserved.set(file.sha256, count);
        else this.unserved.delete(file.sha256);
      }
    else for (const file of entry.bundle.files) this.removeDigest(file.sha256, entry.path);
  }

  /**
   * `remove(previous)` then `add(entry)`, touching only the files that differ when both are served
   * on the same path: a node's change rewrites a few of its ~35 files, and counting all of them
   * down and up again was most of the cost of indexing an entry. Files are paired by position
   * (bundles list them sorted by path); an equal pair cancels out, whatever else is paired.
   */
  replace(previous: FeedEntry | undefined, entry: FeedEntry, fresh?: string[]): void {
    const before = previous?.bundle;
    const after = entry.bundle;
    if (!previous || !before || !after || previous.path !== entry.path || entry.path.length === 0) {
      if (previous) this.remove(previous);
      this.add(entry, fresh);
      return;
    }
    const path = entry.path;
    const common = Math.min(before.files.length, after.files.length);
    let changed: number[] | null = null;
    for (let index = 0; index < common; index++) {
      const old = before.files[index] as FeedFile;
      const fresh = after.files[index] as FeedFile;
      if (old !== fresh && old.sha256 !== fresh.sha256) (changed ??= []).push(index);
    }
    // Added before removed: a digest that only moves within the bundle is never dropped and made again.
    for (const index of changed ?? []) this.addDigest((after.files[index] as FeedFile).sha256, path, fresh);
    for (let index = common; index < after.files.length; index++)
      this.addDigest((after.files[index] as FeedFile).sha256, path, fresh);
    for (const index of changed ?? []) this.removeDigest((before.files[index] as FeedFile).sha256, path);
    for (let index = common; index < before.files.length; index++)
      this.removeDigest((before.files[index] as FeedFile).sha256, path);
  }

  private addDigest(sha256: string, path: readonly string[], fresh?: string[]): void {
    const held = this.byDigest.get(sha256);
    if (held === undefined) {
      this.byDigest.set(sha256, { path, count: 1 });
      fresh?.push(sha256);
    } else if (held instanceof Map) {
      const counted = held.get(path);
      if (counted) counted.count++;
      else held.set(path, { path, count: 1 });
    } else if (held.path === path) held.count++;
    else
      this.byDigest.set(
        sha256,
        new Map([
          [held.path, held],
          [path, { path, count: 1 }],
        ]),
      );
  }

  private removeDigest(sha256: string, path: readonly string[]): void {
    const held = this.byDigest.get(sha256);
    if (held === undefined) return;
    const counted = held instanceof Map ? held.get(path) : held.path === path ? held : undefined;
    if (!counted || --counted.count > 0) return;
    if (!(held instanceof Map)) this.byDigest.delete(sha256);
    else {
      held.delete(path);
      if (held.size === 0) this.byDigest.delete(sha256);
      else if (held.size === 1) this.byDigest.set(sha256, held.values().next().value as PathCount);
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

  /** Whether any latest bundle references the blob, served or not. */
  referencedAnywhere(digest: string): boolean {
    return this.byDigest.has(digest) || this.unserved.has(digest);
  }

  clear(): void {
    this.byDigest.clear();
    this.unserved.clear();
  }
}
