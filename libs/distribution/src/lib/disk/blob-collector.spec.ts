import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { Registry } from 'prom-client';
import type { FeedEntry } from '../feed';
import { BlobCollector } from './blob-collector';
import { BlobDirectory } from './blob-directory';
import { FeedLog } from './feed-log';

const AT = '2026-11-24T10:00:00.000Z';
const digestOf = (content: string): string => createHash('sha256').update(content).digest('hex');

function entry(seq: number, nodeId: string, path: string[], contents: readonly string[]): FeedEntry {
  return {
    seq,
    nodeId,
    path,
    previousPath: [],
    revision: seq,
    bundle: {
      hash: `sha256:${digestOf(`${nodeId}${seq}`)}`,
      revision: seq,
      committedAt: AT,
      generatedAt: AT,
      distributedAt: AT,
      files: contents.map((content, index) => ({ path: `file-${index}`, sha256: digestOf(content) })),
      nodeKey: null,
    },
  };
}

describe('BlobCollector', () => {
  let directory: string;
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'policygen-collector-'));
  });
  afterEach(() => rmSync(directory, { recursive: true, force: true }));

  it('deletes a blob unreferenced for the grace period, never one a latest entry references', async () => {
    const log = await FeedLog.open(join(directory, 'feed.jsonl'));
    const blobs = await BlobDirectory.open(join(directory, 'blobs'));
    let now = 1_000_000;
    const registry = new Registry();
    const collector = new BlobCollector({ blobs, log, graceMs: 600_000, now: () => now, registry });
    for (const content of ['old', 'shared', 'new', 'stray']) await blobs.write(digestOf(content), content);
    await log.append([entry(1, 'n1', ['root'], ['old', 'shared'])]);
    await log.append([entry(2, 'n1', ['root'], ['new', 'shared'])]);

    expect(await collector.sweep()).toBe(0);
    expect(collector.pending).toBe(2);
    now += 599_999;
    expect(await collector.sweep()).toBe(0);
    now += 1;
    expect(await collector.sweep()).toBe(2);
    expect(blobs.digests().sort()).toEqual([digestOf('new'), digestOf('shared')].sort());
    expect(await registry.getSingleMetricAsString('policygen_blobs_collected_total')).toMatch(/ 2$/);
    await log.close();
  });

  it('forgives a blob referenced again, or asked for by a writer, before the grace period ends', async () => {
    const log = await FeedLog.open(join(directory, 'feed.jsonl'));
    const blobs = await BlobDirectory.open(join(directory, 'blobs'));
    let now = 0;
    const collector = new BlobCollector({ blobs, log, graceMs: 100, now: () => now });
    await blobs.writeMany(['back', 'asked'].map((content) => ({ sha256: digestOf(content), content })));
    await collector.sweep();
    expect(collector.pending).toBe(2);
    await log.append([entry(1, 'n1', ['root'], ['back'])]);
    now = 50;
    expect(blobs.has(digestOf('asked'))).toBe(true);
    await collector.sweep();
    expect(collector.pending).toBe(0);
    now = 1_000;
    // Both were seen in use since: each starts its grace period anew.
    await log.append([entry(2, 'n1', ['root'], [])]);
    expect(await collector.sweep()).toBe(0);
    now = 1_100;
    expect(await collector.sweep()).toBe(2);
    await log.close();
  });

  it('on a relay, counts only the bundles the relay keeps', async () => {
    const log = await FeedLog.open(join(directory, 'feed.jsonl'));
    const blobs = await BlobDirectory.open(join(directory, 'blobs'));
    let now = 0;
    const collector = new BlobCollector({ blobs, log, relayId: 'eu', graceMs: 10, now: () => now });
    await blobs.writeMany(['mine', 'moved away'].map((content) => ({ sha256: digestOf(content), content })));
    await log.append([
      entry(1, 'n1', ['root', 'eu'], ['mine']),
      entry(2, 'n2', ['root', 'us'], ['moved away']),
    ]);
    await collector.sweep();
    now = 10;
    expect(await collector.sweep()).toBe(1);
    expect(blobs.digests()).toEqual([digestOf('mine')]);
    await log.close();
  });

  it('never collects a blob a latest entry references, whatever the history and the clock', async () => {
    const contents = ['a', 'b', 'c', 'd', 'e'];
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            node: fc.constantFrom('n1', 'n2', 'n3'),
            files: fc.subarray(contents),
            advanceMs: fc.nat(300),
          }),
          { minLength: 1, maxLength: 25 },
        ),
        async (steps) => {
          const at = mkdtempSync(join(directory, 'case-'));
          const log = await FeedLog.open(join(at, 'feed.jsonl'));
          const blobs = await BlobDirectory.open(join(at, 'blobs'));
          let now = 0;
          const collector = new BlobCollector({ blobs, log, graceMs: 200, now: () => now });
          for (const [index, step] of steps.entries()) {
            for (const content of step.files)
              if (!blobs.has(digestOf(content))) await blobs.write(digestOf(content), content);
            await log.append([entry(index + 1, step.node, ['root'], step.files)]);
            now += step.advanceMs;
            await collector.sweep();
            for (const latest of log.latestEntries())
              for (const file of latest.bundle?.files ?? []) expect(blobs.has(file.sha256)).toBe(true);
          }
          await log.close();
          blobs.close();
        },
      ),
      { numRuns: 40 },
    );
  });
});
