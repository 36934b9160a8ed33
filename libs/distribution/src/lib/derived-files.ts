import { createHash } from 'node:crypto';
import { GENERATED_AT_FILE, MANIFEST_FILE, manifestFromParts } from '@policygen/engine';
import { MANIFEST_HEAD_PATH, MANIFEST_PROPERTIES_PATH, isManifestPartPath } from '@policygen/sdk';
import type { FeedBundle, FeedFile } from './feed';

/**
 * Two files of every bundle are the node's own — its manifest (its id, revision, file list and
 * hash) and its generation time — so each node change used to move a new blob of each, ~10 KB in
 * all, through every hop: the generator's cache, the root's disk, each relay's fetch, hash and
 * disk. A bundle that names its manifest's parts has them derived instead, where a node is served,
 * from the entry and the parts; the entry keeps their digests, which check what is derived.
 */
export function derivesFiles(bundle: Pick<FeedBundle, 'files'>): boolean {
  let head = false;
  let properties = false;
  for (const file of bundle.files) {
    if (file.path === MANIFEST_HEAD_PATH) head = true;
    else if (file.path === MANIFEST_PROPERTIES_PATH) properties = true;
  }
  return head && properties;
}

export function isDerivedPath(path: string): boolean {
  return path === MANIFEST_FILE || path === GENERATED_AT_FILE;
}

/** The manifest's parts (engine `manifestParts`), moved as blobs like the tree's files, never served as files. */
export const isPartPath = isManifestPartPath;

/** The digests a holder of the bundle keeps as blobs: every file's but the derived ones'. */
export function blobFiles(bundle: Pick<FeedBundle, 'files'>): readonly FeedFile[] {
  if (!derivesFiles(bundle)) return bundle.files;
  return bundle.files.filter((file) => !isDerivedPath(file.path));
}

/** The node's tree: every file but the manifest's parts, in the bundle's order (by path). */
export function treeFiles(bundle: Pick<FeedBundle, 'files'>): readonly FeedFile[] {
  if (!derivesFiles(bundle)) return bundle.files;
  return bundle.files.filter((file) => !isPartPath(file.path));
}

/** A derived file's content does not have the digest its entry names: the entry or a part is wrong. */
export class DerivationError extends Error {
  constructor(
    readonly nodeId: string,
    readonly path: string,
    readonly expected: string,
    readonly actual: string,
  ) {
    super(`the ${path} derived for node ${nodeId} has the digest ${actual}, not ${expected}`);
  }
}

/**
 * The content of a derived file of the bundle (`isDerivedPath`), put together from the entry and the
 * manifest's parts (read with `read`), and checked against the digest the entry names.
 */
export async function deriveFile(
  nodeId: string,
  bundle: FeedBundle,
  file: FeedFile,
  read: (sha256: string) => Promise<Buffer>,
): Promise<Buffer> {
  let content: Buffer;
  if (file.path === GENERATED_AT_FILE) content = Buffer.from(`${Date.parse(bundle.generatedAt)}\n`);
  else {
    const part = (path: string): FeedFile => {
      const found = bundle.files.find((candidate) => candidate.path === path);
      if (!found) throw new Error(`node ${nodeId}'s bundle ${bundle.hash} has no ${path}`);
      return found;
    };
    const [head, properties] = await Promise.all([
      read(part(MANIFEST_HEAD_PATH).sha256),
      read(part(MANIFEST_PROPERTIES_PATH).sha256),
    ]);
    const files = treeFiles(bundle)
      .filter((listed) => listed.path !== MANIFEST_FILE)
      .map((listed) => ({ path: listed.path, sha256: listed.sha256 }));
    content = Buffer.from(
      manifestFromParts(
        { nodeId, configRevision: bundle.revision, files, hash: bundle.hash },
        { head: head.toString('utf8'), properties: properties.toString('utf8') },
      ),
    );
  }
  const actual = createHash('sha256').update(content).digest('hex');
  if (actual !== file.sha256) throw new DerivationError(nodeId, file.path, file.sha256, actual);
  return content;
}

/**
 * Adds to `missing` the digests of `files` that `has` does not hold. A file that `before` (the
 * blob files of the node's latest entry, held) names at the same place with the same digest is not
 * looked up: a latest entry's blobs were stored before it was appended and stay referenced (the
 * collector keeps them), but for the `unheld` ones (dropped as torn at opening and not given
 * again). A node change alters one or two of its ~35 files: looking up the others, each digest
 * freshly parsed from JSON hashed again, was the largest part of taking a page in (profiled).
 */
export function addMissingBlobs(
  files: readonly FeedFile[],
  before: readonly FeedFile[],
  unheld: ReadonlySet<string>,
  has: (sha256: string) => boolean,
  missing: Set<string>,
): void {
  for (let index = 0; index < files.length; index++) {
    const file = files[index] as FeedFile;
    const held = before[index];
    if (held?.sha256 === file.sha256 && held.path === file.path && !unheld.has(file.sha256)) continue;
    if (!has(file.sha256)) missing.add(file.sha256);
  }
}
