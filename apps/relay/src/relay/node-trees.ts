import { randomBytes } from 'node:crypto';
import { copyFile, link, mkdir, readdir, readFile, realpath, rename, rm, symlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { BlobDirectory, FeedEntry } from '@policygen/distribution';

/**
 * The nodes' policy trees on a relay's disk: `trees/<node>/<bundle hash>/` holds a bundle's files
 * (hard links to the blobs), and `nodes/<node>` is a symbolic link to the tree being served.
 * A new bundle is built beside the old one, then the link is replaced by a rename, so a reader
 * sees the old tree or the new one, never a mix (Rudder's `rules.new` switch, made atomic).
 */
export class NodeTrees {
  constructor(
    private readonly directory: string,
    private readonly blobs: BlobDirectory,
  ) {}

  static async open(directory: string, blobs: BlobDirectory): Promise<NodeTrees> {
    await mkdir(join(directory, 'trees'), { recursive: true });
    await mkdir(join(directory, 'nodes'), { recursive: true });
    return new NodeTrees(directory, blobs);
  }

  /** Serves the entry's bundle for its node; its blobs must be in the blob directory. */
  async keep(entry: FeedEntry): Promise<void> {
    const bundle = entry.bundle;
    if (!bundle) throw new Error(`entry ${entry.seq} of ${entry.nodeId} has no bundle to keep`);
    const nodeDirectory = join(this.directory, 'trees', safeName(entry.nodeId));
    const treeName = bundle.hash.replace(/^sha256:/, '');
    const tree = join(nodeDirectory, treeName);
    if (!(await exists(tree))) {
      const staging = join(nodeDirectory, `.${treeName}.new-${randomBytes(4).toString('hex')}`);
      for (const file of bundle.files) {
        const target = join(staging, ...file.path.split('/'));
        await mkdir(dirname(target), { recursive: true });
        await linkOrCopy(this.blobs.path(file.sha256), target);
      }
      await rename(staging, tree);
    }
    const pointer = this.pointer(entry.nodeId);
    const pointerStaging = `${pointer}.new-${randomBytes(4).toString('hex')}`;
    await symlink(join('..', 'trees', safeName(entry.nodeId), treeName), pointerStaging);
    await rename(pointerStaging, pointer);
    for (const other of await readdir(nodeDirectory))
      if (other !== treeName) await rm(join(nodeDirectory, other), { recursive: true, force: true });
  }

  /** Stops serving a node and removes its trees. */
  async drop(nodeId: string): Promise<void> {
    await rm(this.pointer(nodeId), { force: true });
    await rm(join(this.directory, 'trees', safeName(nodeId)), { recursive: true, force: true });
  }

  /** The tree a node is served now, resolved once so that a switch meanwhile cannot mix two. */
  async servedTree(nodeId: string): Promise<string | null> {
    try {
      return await realpath(this.pointer(nodeId));
    } catch {
      return null;
    }
  }

  async readFile(tree: string, path: string): Promise<Buffer> {
    return readFile(join(tree, ...path.split('/')));
  }

  private pointer(nodeId: string): string {
    return join(this.directory, 'nodes', safeName(nodeId));
  }
}

/** Node ids are fleet ids (letters, digits, `._-`); anything else is escaped to stay one name. */
function safeName(nodeId: string): string {
  const name = encodeURIComponent(nodeId);
  return name === '.' || name === '..' ? `%2E${name.slice(1)}` : name;
}

async function exists(path: string): Promise<boolean> {
  try {
    await realpath(path);
    return true;
  } catch {
    return false;
  }
}

async function linkOrCopy(source: string, target: string): Promise<void> {
  try {
    await link(source, target);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EXDEV' && code !== 'EPERM' && code !== 'EMLINK') throw error;
    await copyFile(source, target);
  }
}
