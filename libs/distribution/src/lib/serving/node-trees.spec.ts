import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { BlobCollector } from '../disk/blob-collector';
import { BlobDirectory } from '../disk/blob-directory';
import { FeedLog } from '../disk/feed-log';
import type { FeedBundle } from '../feed';
import type { NodeTree } from './node-trees';
import { NodeTrees, TreeIncompleteError } from './node-trees';

const AT = '2026-11-24T10:00:00.000Z';
const digestOf = (content: string): string => createHash('sha256').update(content).digest('hex');

/** A relay's files: its feed log, blobs in tiny packs (so that collection removes whole packs), a collector without grace. */
async function relayFiles(directory: string): Promise<{
  log: FeedLog;
  blobs: BlobDirectory;
  collector: BlobCollector;
  trees: NodeTrees;
  publish: (contents: readonly string[]) => Promise<void>;
  close: () => Promise<void>;
}> {
  const log = await FeedLog.open(join(directory, 'feed.jsonl'));
  const blobs = await BlobDirectory.open(join(directory, 'blobs'), { packLimit: 16 });
  let clock = 0;
  const collector = new BlobCollector({ blobs, log, relayId: 'eu', graceMs: 1, now: () => (clock += 1) });
  let version = 0;
  return {
    log,
    blobs,
    collector,
    trees: new NodeTrees('eu', log, blobs),
    async publish(contents) {
      version++;
      await blobs.writeMany(contents.map((content) => ({ sha256: digestOf(content), content })));
      await log.append([
        {
          seq: log.cursor + 1,
          nodeId: 'node-1',
          path: ['root', 'eu'],
          previousPath: ['root', 'eu'],
          revision: version,
          bundle: {
            hash: `sha256:${digestOf(`${version}:${contents.join('\n')}`)}`,
            revision: version,
            committedAt: AT,
            generatedAt: AT,
            distributedAt: AT,
            files: contents.map((content, index) => ({ path: `file-${index}`, sha256: digestOf(content) })),
            nodeKey: null,
          },
        },
      ]);
    },
    async close() {
      await collector.stop();
      await log.close();
      blobs.close();
    },
  };
}

const texts = (tree: NodeTree): string[] => tree.contents.map((content) => content.toString());

describe('NodeTrees: what a node downloads from its relay', () => {
  let directory: string;
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'policygen-node-trees-'));
  });
  afterEach(() => rmSync(directory, { recursive: true, force: true }));

  it('any interleaving of bundle switches, collections and downloads gives each download a whole tree, old or new, never an error', async () => {
    // Bundles of a few small files, an empty one among them as real bundles have.
    const bundleContents = fc.array(
      fc.oneof(
        { arbitrary: fc.constant(''), weight: 2 },
        { arbitrary: fc.string({ maxLength: 120 }), weight: 3 },
      ),
      { minLength: 1, maxLength: 5 },
    );
    const step = fc.constantFrom('switch', 'sweep', 'sweep', 'download', 'download', 'turn');
    await fc.assert(
      fc.asyncProperty(
        fc.array(bundleContents, { minLength: 2, maxLength: 6 }),
        fc.array(step, { minLength: 1, maxLength: 40 }),
        async (versions, steps) => {
          const files = await relayFiles(mkdtempSync(join(directory, 'case-')));
          try {
            await files.publish(versions[0] ?? []);
            let current = 0;
            const downloads: { from: number; tree: Promise<NodeTree> }[] = [];
            for (const kind of steps) {
              if (kind === 'switch' && current + 1 < versions.length)
                await files.publish(versions[++current] ?? []);
              else if (kind === 'sweep') await files.collector.sweep();
              else if (kind === 'turn') await new Promise(setImmediate);
              else if (kind === 'download') {
                const bundle = files.trees.bundleOf('node-1') as FeedBundle;
                downloads.push({ from: current, tree: files.trees.read('node-1', bundle) });
              }
            }
            for (const { from, tree } of downloads) {
              const got = texts(await tree);
              const candidates = versions.slice(from, current + 1).map((contents) => [...contents]);
              expect(candidates).toContainEqual(got);
            }
            // And after everything, the node's tree is its latest bundle's.
            const last = files.trees.bundleOf('node-1') as FeedBundle;
            expect(texts(await files.trees.read('node-1', last))).toEqual(versions[current]);
          } finally {
            await files.close();
          }
        },
      ),
      { numRuns: 100 },
    );
  });

  it('reads the newer tree when a file of the bundle it was given went away meanwhile', async () => {
    const files = await relayFiles(directory);
    await files.publish(['old a', 'shared']);
    const old = files.trees.bundleOf('node-1') as FeedBundle;
    await files.publish(['new a', 'shared']);
    files.blobs.takeTouched();
    await files.blobs.deleteUnlessTouched(digestOf('old a'));
    const tree = await files.trees.read('node-1', old);
    expect(tree.bundle.revision).toBe(2);
    expect(texts(tree)).toEqual(['new a', 'shared']);
    await files.close();
  });

  it('says which file is missing when the bundle it serves lacks one (a 503 for the node, not a 500)', async () => {
    const files = await relayFiles(directory);
    await files.publish(['a', 'b']);
    files.blobs.takeTouched();
    await files.blobs.deleteUnlessTouched(digestOf('b'));
    const bundle = files.trees.bundleOf('node-1') as FeedBundle;
    const failure = files.trees.read('node-1', bundle);
    await expect(failure).rejects.toBeInstanceOf(TreeIncompleteError);
    await expect(failure).rejects.toThrow(digestOf('b'));
    await expect(files.trees.file('node-1', bundle, 'file-1')).rejects.toBeInstanceOf(TreeIncompleteError);
    expect((await files.trees.file('node-1', bundle, 'file-0'))?.toString()).toBe('a');
    expect(await files.trees.file('node-1', bundle, 'absent')).toBeNull();
    await files.close();
  });

  it('serves no bundle of a node whose entry is not on its path, or that has none', async () => {
    const files = await relayFiles(directory);
    expect(files.trees.bundleOf('node-1')).toBeNull();
    await files.publish(['a']);
    expect(files.trees.bundleOf('node-1')).not.toBeNull();
    await files.log.append([
      {
        seq: files.log.cursor + 1,
        nodeId: 'node-1',
        path: ['root', 'us'],
        previousPath: ['root', 'eu'],
        revision: 3,
        bundle: null,
      },
    ]);
    expect(files.trees.bundleOf('node-1')).toBeNull();
    await files.close();
  });
});
