import type { BlobDirectory } from '../disk/blob-directory';
import type { FeedLog } from '../disk/feed-log';
import type { FeedBundle, FeedFile } from '../feed';
import { entryFor } from '../feed';
import { deriveFile, derivesFiles, isDerivedPath, treeFiles } from '../derived-files';

/**
 * A node's bundle, the files of its tree (`treeFiles`: the manifest's parts are not served) and
 * the content of each, in the bundle's order, read as of one entry.
 */
export interface NodeTree {
  readonly bundle: FeedBundle;
  readonly files: readonly FeedFile[];
  readonly contents: readonly Buffer[];
}

/** The files of the bundle a node is served are not all on this relay (dropped as torn, being fetched again). */
export class TreeIncompleteError extends Error {
  constructor(
    readonly nodeId: string,
    readonly hash: string,
    readonly missing: string,
  ) {
    super(`the file ${missing} of node ${nodeId}'s bundle ${hash} is not on this relay yet`);
  }
}

/** How often a read is taken again from the newer bundle after a file went missing under it. */
const ATTEMPTS = 3;

/**
 * What a node downloads from its relay: the bundle of its latest entry (when the relay keeps it)
 * and its files from the blob directory. The entry and the places of its blobs are taken in one
 * turn of the event loop, and blobs never change, so a download gives the old tree or the new one
 * whole. Should a blob be gone all the same (deleted, dropped as torn), the tree is read again
 * from the node's newer bundle; with none, the relay says it lacks the files (not a server error).
 */
export class NodeTrees {
  constructor(
    readonly relayId: string,
    private readonly log: FeedLog,
    private readonly blobs: BlobDirectory,
  ) {}

  /** The bundle the node is served now; null when this relay does not serve it. */
  bundleOf(nodeId: string): FeedBundle | null {
    const entry = this.log.latest(nodeId);
    return entry?.bundle && entryFor(entry, this.relayId) === 'keep' ? entry.bundle : null;
  }

  /** The node's tree as of `bundle` (taken a moment ago), or as of a newer bundle if it switched meanwhile. */
  async read(nodeId: string, bundle: FeedBundle): Promise<NodeTree> {
    let reading = bundle;
    for (let attempt = 1; ; attempt++) {
      try {
        const read = reading;
        const files = treeFiles(read);
        return {
          bundle: read,
          files,
          contents: await Promise.all(files.map((file) => this.content(nodeId, read, file))),
        };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        const newer = this.bundleOf(nodeId);
        if (attempt < ATTEMPTS && newer && newer.hash !== reading.hash) reading = newer;
        else throw new TreeIncompleteError(nodeId, reading.hash, missingOf(error));
      }
    }
  }

  /** One file of the node's bundle, by path: null when the bundle has none. */
  async file(nodeId: string, bundle: FeedBundle, path: string): Promise<Buffer | null> {
    const file = treeFiles(bundle).find((candidate) => candidate.path === path);
    if (!file) return null;
    try {
      return await this.content(nodeId, bundle, file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      throw new TreeIncompleteError(nodeId, bundle.hash, file.sha256);
    }
  }

  /** A file's content: from the blob directory, or derived from the entry and the manifest's parts. */
  private content(nodeId: string, bundle: FeedBundle, file: FeedFile): Promise<Buffer> {
    if (isDerivedPath(file.path) && derivesFiles(bundle))
      return deriveFile(nodeId, bundle, file, (sha256) => this.blobs.read(sha256));
    return this.blobs.read(file.sha256);
  }
}

function missingOf(error: unknown): string {
  return /[0-9a-f]{64}/.exec((error as Error).message)?.[0] ?? 'unknown';
}
