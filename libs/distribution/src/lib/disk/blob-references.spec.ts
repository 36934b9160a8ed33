import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import type { FeedEntry } from '../feed';
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
            }
          await log.close();
        },
      ),
      { numRuns: 150 },
    );
  });
});
