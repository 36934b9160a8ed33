import { mkdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { BundleFile, NodeBundle } from '@policygen/engine';
import { manifestText } from '@policygen/engine';
import { InputError, describeFsError } from '../errors';

export const MANIFEST_FILE = 'policy-manifest.json';

/** Makes sure the output directory exists (creating it), or says why it cannot be used. */
export async function prepareOutputDirectory(outDir: string): Promise<void> {
  const existing = await stat(outDir).catch(() => undefined);
  if (existing && !existing.isDirectory()) throw new InputError(`--out ${outDir}: not a directory`);
  try {
    await mkdir(outDir, { recursive: true });
  } catch (error) {
    throw new InputError(`cannot create output directory ${outDir}: ${describeFsError(error)}`);
  }
}

/**
 * Writes one node's bundle under `outDir/<nodeId>/` (outputs.md):
 * - ok: the whole tree, written aside then renamed over the previous one, so a reader never sees
 *   half a tree;
 * - failed: only its `policy-manifest.json` (saying why), replacing that file alone: the node
 *   keeps its last good tree;
 * - ignored: nothing.
 */
export async function writeNodeBundle(outDir: string, bundle: NodeBundle): Promise<void> {
  switch (bundle.status) {
    case 'ok':
      return replaceTree(outDir, bundle);
    case 'failed':
      return replaceManifest(outDir, bundle);
    case 'ignored':
      return;
  }
}

async function replaceTree(outDir: string, bundle: NodeBundle): Promise<void> {
  const target = join(outDir, bundle.nodeId);
  const staging = join(outDir, `.${bundle.nodeId}.tmp-${process.pid}`);
  await rm(staging, { recursive: true, force: true });
  try {
    await mkdir(staging, { recursive: true });
    const created = new Set<string>([staging]);
    for (const file of bundle.files) {
      const path = pathInside(staging, file.path);
      const directory = dirname(path);
      if (!created.has(directory)) {
        await mkdir(directory, { recursive: true });
        created.add(directory);
      }
      await writeFile(path, file.content);
    }
    await rm(target, { recursive: true, force: true });
    await rename(staging, target);
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
}

async function replaceManifest(outDir: string, bundle: NodeBundle): Promise<void> {
  const directory = join(outDir, bundle.nodeId);
  await mkdir(directory, { recursive: true });
  const path = join(directory, MANIFEST_FILE);
  const staging = join(directory, `.${MANIFEST_FILE}.tmp-${process.pid}`);
  await writeFile(staging, manifestContent(bundle));
  await rename(staging, path);
}

function manifestContent(bundle: NodeBundle): string {
  const file: BundleFile | undefined = bundle.files.find((candidate) => candidate.path === MANIFEST_FILE);
  if (file) return file.content;
  return bundle.manifest ? manifestText(bundle.manifest) : 'null\n';
}

/** `root/relative`, refusing a bundle path that would land outside the node's directory. */
function pathInside(root: string, relative: string): string {
  const segments = relative.split('/');
  if (relative.startsWith('/') || relative.includes('\\') || segments.some((s) => s === '..' || s === '')) {
    throw new Error(`refusing to write bundle file outside its node directory: ${relative}`);
  }
  return join(root, ...segments);
}

/** Removes a node's tree: the node left the fleet. */
export async function removeNodeBundle(outDir: string, nodeId: string): Promise<void> {
  await rm(join(outDir, nodeId), { recursive: true, force: true });
}
