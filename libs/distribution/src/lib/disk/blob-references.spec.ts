import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import type { FeedEntry } from '../feed';
import { BlobReferences } from './blob-references';
import { FeedLog } from './feed-log';

const AT = '2026-11-24T10:00:00.000Z';
const DIGESTS = ['a', 'b', 'c', 'd', 'e'].map((letter) => letter.repeat(64));
const PATHS = [[], ['root'], ['root', 'eu'], ['root', 'eu', 'eu-par'], ['root', 'us']];
const RELAYS = ['root', 'eu', 'eu-par', 'us', 'nowhere'];

describe('which blobs a relay may read (FeedLog.referencedBelow)', () => {
  let directory: string;
  beforeAll(() => {
    directory = mkdtempSync(join(tmpdir(), 'policygen-blob-references-'));
  });
  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  it('answers as the latest entries say, through moves, new bundles, removals and compactions', async () => {
    const change = fc.record({
      node: fc.constantFrom('n1', 'n2', 'n3'),
      path: fc.nat(PATHS.length - 1),
      files: fc.option(fc.array(fc.nat(DIGESTS.length - 1), { maxLength: 4 }), { nil: null }),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(change, { minLength: 1, maxLength: 25 }),
        fc.boolean(),
        async (changes, compact) => {
          const log = await FeedLog.open(join(mkdtempSync(join(directory, 'case-')), 'feed.jsonl'), {
            compactAfter: compact ? 2 : 1_000_000,
          });
          for (const [index, { node, path, files }] of changes.entries()) {
            const entry: FeedEntry = {
              seq: index + 1,
              nodeId: node,
              path: [...(PATHS[path] ?? [])],
              previousPath: [],
              revision: index + 1,
              bundle: files && {
                hash: `sha256:${'f'.repeat(64)}`,
                revision: index + 1,
                committedAt: AT,
                generatedAt: AT,
                distributedAt: AT,
                files: files.map((file, at) => ({ path: `file-${at}`, sha256: DIGESTS[file] ?? '' })),
                nodeKey: null,
              },
            };
            await log.append([entry]);
          }
          const latest = [...log.latestEntries()];
          for (const digest of DIGESTS)
            for (const relay of [...RELAYS, null]) {
              const truth = latest.some(
                (entry) =>
                  entry.path.length > 0 &&
                  (relay === null || entry.path.includes(relay)) &&
                  !!entry.bundle?.files.some((file) => file.sha256 === digest),
              );
              expect({ digest: digest[0], relay, readable: log.referencedBelow(digest, relay) }).toEqual({
                digest: digest[0],
                relay,
                readable: truth,
              });
              for (const digest of DIGESTS)
                expect([digest[0], log.referencedAnywhere(digest)]).toEqual([
                  digest[0],
                  latest.some((entry) => !!entry.bundle?.files.some((file) => file.sha256 === digest)),
                ]);
            }
          await log.close();
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe('BlobReferences.replace (a node changing only the files that differ)', () => {
  const entryOf = (
    seq: number,
    path: readonly string[],
    files: readonly number[] | null,
    filePaths: readonly string[],
  ): FeedEntry => ({
    seq,
    nodeId: 'n',
    path: [...path],
    previousPath: [],
    revision: seq,
    bundle: files && {
      hash: `sha256:${'f'.repeat(64)}`,
      revision: seq,
      committedAt: AT,
      generatedAt: AT,
      distributedAt: AT,
      files: files.map((file, at) => ({ path: filePaths[at] ?? `f${at}`, sha256: DIGESTS[file] ?? '' })),
      nodeKey: null,
    },
  });

  it('answers as removing the previous entry then adding the new one does', () => {
    // Paths shared by identity, as the feed log interns them; some changes keep the path, some move.
    const paths = PATHS.map((path) => [...path]);
    const version = fc.record({
      path: fc.nat(paths.length - 1),
      files: fc.option(fc.array(fc.nat(DIGESTS.length - 1), { maxLength: 6 }), { nil: null }),
      filePaths: fc.array(fc.constantFrom('a', 'b', 'c'), { minLength: 6, maxLength: 6 }),
    });
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(2), version), { minLength: 1, maxLength: 30 }), (changes) => {
        const shortcut = new BlobReferences();
        const plain = new BlobReferences();
        const latest = new Map<number, FeedEntry>();
        for (const [index, [node, { path, files, filePaths }]] of changes.entries()) {
          const entry = { ...entryOf(index + 1, [], files, filePaths), path: paths[path] ?? [] };
          const previous = latest.get(node);
          const before = new Set(DIGESTS.filter((digest) => shortcut.referencedBelow(digest, null)));
          const fresh: string[] = [];
          shortcut.replace(previous, entry, fresh);
          if (previous) plain.remove(previous);
          plain.add(entry);
          latest.set(node, entry);
          // Every digest named now and not before is told fresh, and only digests named now.
          const after = DIGESTS.filter((digest) => shortcut.referencedBelow(digest, null));
          expect(fresh).toEqual(expect.arrayContaining(after.filter((digest) => !before.has(digest))));
          expect(after).toEqual(expect.arrayContaining(fresh));
        }
        for (const digest of DIGESTS)
          for (const relay of [...RELAYS, null])
            expect(shortcut.referencedBelow(digest, relay)).toBe(plain.referencedBelow(digest, relay));
      }),
      { numRuns: 500 },
    );
  });
});
