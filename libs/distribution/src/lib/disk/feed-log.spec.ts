import { createHash } from 'node:crypto';
import {
  appendFileSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import fc from 'fast-check';
import { join } from 'node:path';
import type { FeedEntry } from '../feed';
import { DiskHealth } from './disk-health';
import { FeedLog } from './feed-log';

const AT = '2026-11-24T10:00:00.000Z';
const digestOf = (content: string): string => createHash('sha256').update(content).digest('hex');

/**
 * A node's entry as the fleet's are: 34 files, 27 of them shared by a quarter of the nodes; with
 * `oneContent`, every file has the same content (one digest at several paths).
 */
function entry(seq: number, node: number, fileCount = 34, oneContent = false): FeedEntry {
  const files = Array.from({ length: fileCount }, (_, index) => ({
    path: `rules/cfengine-community/file-${String(index).padStart(2, '0')}.cf`,
    sha256: digestOf(
      oneContent
        ? 'the same content'
        : index < 7
          ? `node ${node} file ${index} at ${seq}`
          : `shared ${index} variant ${node % 4}`,
    ),
  }));
  return {
    seq,
    nodeId: `node-${node}`,
    path: ['root', `relay-${node % 3}`],
    previousPath: [],
    revision: seq,
    bundle: {
      hash: `sha256:${digestOf(`${node}:${seq}`)}`,
      revision: seq,
      committedAt: AT,
      generatedAt: AT,
      distributedAt: AT,
      files,
      nodeKey: null,
    },
  };
}

describe('FeedLog on a large file', () => {
  let directory: string;
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'policygen-feed-large-'));
  });
  afterEach(() => rmSync(directory, { recursive: true, force: true }));

  it('reopens a file of many read chunks line by line, drops the torn last line, and shares equal file references', async () => {
    const file = join(directory, 'feed.jsonl');
    const log = await FeedLog.open(file, { compactAfter: 1_000_000 });
    const nodes = 4_000;
    for (let start = 0; start < nodes; start += 500)
      await log.append(Array.from({ length: 500 }, (_, index) => entry(start + index + 1, start + index)));
    await log.append([entry(nodes + 1, 7)], nodes + 5);
    await log.close();
    const size = statSync(file).size;
    expect(size).toBeGreaterThan(3 * 4 * 2 ** 20);
    appendFileSync(file, JSON.stringify(entry(nodes + 6, 8)).slice(0, 5_000));

    const reopened = await FeedLog.open(file);
    expect(statSync(file).size).toBe(size);
    expect(reopened.cursor).toBe(nodes + 5);
    expect(reopened.nodeCount).toBe(nodes);
    expect(reopened.latest('node-7')).toEqual(entry(nodes + 1, 7));
    expect(reopened.latest('node-8')).toEqual(entry(9, 8));
    expect(reopened.after(0, 'relay-1', 10_000).entries).toHaveLength(
      Math.floor(nodes / 3) + (nodes % 3 > 1 ? 1 : 0),
    );
    const [first, second] = [reopened.latest('node-0'), reopened.latest('node-12')];
    expect(first?.bundle?.files[20]).toBe(second?.bundle?.files[20]);
    expect(first?.path).toBe(second?.path);
    await reopened.close();
  });

  it('compacts by default once it holds as many superseded lines as nodes, streaming the rewrite', async () => {
    const file = join(directory, 'feed.jsonl');
    const log = await FeedLog.open(file);
    const nodes = 11_000;
    for (let start = 0; start < nodes; start += 1_000)
      await log.append(
        Array.from({ length: 1_000 }, (_, index) => entry(start + index + 1, start + index, 2)),
      );
    const grown = statSync(file).size;
    for (let start = 0; start < nodes; start += 1_000)
      await log.append(
        Array.from({ length: 1_000 }, (_, index) => entry(nodes + start + index + 1, start + index, 2)),
      );
    // 11,000 superseded lines reached the threshold (one per node) at the last page: rewritten.
    await log.settled();
    expect(statSync(file).size).toBeLessThan(grown * 1.1);
    await log.close();
    const reopened = await FeedLog.open(file);
    expect(reopened.nodeCount).toBe(nodes);
    expect(reopened.latest('node-5')?.seq).toBe(nodes + 6);
    await reopened.close();
  });
});

describe('FeedLog after a crash mid-append: the torn tail found, counted and cut at opening', () => {
  let directory: string;
  let file: string;
  let health: DiskHealth;
  beforeEach(async () => {
    directory = mkdtempSync(join(tmpdir(), 'policygen-feed-torn-'));
    file = join(directory, 'feed.jsonl');
    health = new DiskHealth();
    const log = await FeedLog.open(file, { durable: true });
    await log.append([entry(1, 1), entry(2, 2)], 5);
    await log.close();
  });
  afterEach(() => rmSync(directory, { recursive: true, force: true }));

  const reopenedAfter = async (tail: string | Buffer): Promise<FeedLog> => {
    const size = statSync(file).size;
    appendFileSync(file, tail);
    const log = await FeedLog.open(file, { health });
    expect(statSync(file).size).toBe(size);
    expect(log.cursor).toBe(5);
    expect(log.nodeCount).toBe(2);
    return log;
  };

  it('cuts a line without its newline, and appends after the cut', async () => {
    const log = await reopenedAfter(JSON.stringify(entry(6, 3)).slice(0, 100));
    expect(health.repaired).toMatchObject([{ store: 'feed', kind: 'torn-line', detail: { line: 4 } }]);
    await log.append([entry(6, 3)]);
    await log.close();
    const again = await FeedLog.open(file);
    expect(again.latest('node-3')).toEqual(entry(6, 3));
    await again.close();
  });

  it('cuts at a line a power loss filled with zeros, and drops what follows it (never acknowledged)', async () => {
    const log = await reopenedAfter(
      Buffer.concat([Buffer.alloc(300), Buffer.from(`\n${JSON.stringify(entry(7, 4))}\n`)]),
    );
    expect(health.repaired).toMatchObject([{ kind: 'torn-line', detail: { line: 4 } }]);
    expect(String(health.repaired[0]?.detail['reason'])).toMatch(/^not JSON/);
    expect(log.latest('node-4')).toBeUndefined();
    await log.close();
  });

  it('cuts at a line that is JSON but no entry', async () => {
    const log = await reopenedAfter('{"seq":6,"nodeId":""}\n');
    expect(String(health.repaired[0]?.detail['reason'])).toMatch(/^not a feed entry/);
    await log.close();
  });

  it('removes a rewrite left half done, keeping the log it was to replace', async () => {
    writeFileSync(`${file}.compacting`, '{"seq":1');
    const log = await FeedLog.open(file, { health });
    expect(health.repaired).toMatchObject([{ kind: 'leftover-staging-file' }]);
    expect(existsSync(`${file}.compacting`)).toBe(false);
    expect(log.nodeCount).toBe(2);
    await log.close();
  });

  it('rewrites aside and renames: the file after a compaction holds each node once and the cursor', async () => {
    const log = await FeedLog.open(file, { compactAfter: 2 });
    await log.append([entry(6, 1), entry(7, 2)]);
    await log.close();
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    expect(lines.map((line) => (JSON.parse(line) as { seq?: number; next?: number }).seq ?? 'next')).toEqual([
      6,
      7,
      'next',
    ]);
    expect(existsSync(`${file}.compacting`)).toBe(false);
  });
});

describe('FeedLog rewriting beside the appends', () => {
  let directory: string;
  beforeAll(() => {
    directory = mkdtempSync(join(tmpdir(), 'policygen-feed-rewrite-'));
  });
  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  const PATHS = [[], ['root'], ['root', 'eu'], ['root', 'us']];
  const RELAYS = ['root', 'eu', 'us'];

  const expectSame = (log: FeedLog, expected: FeedLog | Map<string, FeedEntry>, cursor: number): void => {
    for (const relay of RELAYS)
      for (const after of [0, Math.floor(cursor / 2)]) {
        const slice = log.after(after, relay, 7);
        const text = log.afterAsJson(after, relay, 7);
        // The bytes served are the entries held, whether read from lines or written anew.
        expect(JSON.parse(`[${text.json.toString()}]`)).toEqual(slice.entries);
        expect([text.count, text.next]).toEqual([slice.entries.length, slice.next]);
        if (expected instanceof FeedLog) expect(slice).toEqual(expected.after(after, relay, 7));
      }
    if (expected instanceof Map)
      // Each node's bundle and its files as appended, however the log shares them between entries.
      expect(
        new Map(
          [...log.latestEntries()].map((entry) => [entry.nodeId, [entry.bundle?.hash, entry.bundle?.files]]),
        ),
      ).toEqual(
        new Map([...expected].map(([node, entry]) => [node, [entry.bundle?.hash, entry.bundle?.files]])),
      );
  };

  it('keeps every append and serves the same pages, through rewrites under way, finished, and reopened', async () => {
    const change = fc.record({
      node: fc.nat(5),
      path: fc.nat(PATHS.length - 1),
      files: fc.nat(3),
      oneContent: fc.boolean(),
      advance: fc.nat(2),
      settle: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(change, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 1, max: 4 }),
        async (batches, compactAfter) => {
          const file = join(mkdtempSync(join(directory, 'case-')), 'feed.jsonl');
          const log = await FeedLog.open(file, { compactAfter, durable: true });
          const latest = new Map<string, FeedEntry>();
          const everOn = new Map<string, Set<string>>();
          let seq = 0;
          for (const batch of batches) {
            const entries = batch.map(({ node, path, files, oneContent }) => {
              const base = entry(++seq, node, files + 1, oneContent);
              const made = {
                ...base,
                path: [...(PATHS[path] ?? [])],
                previousPath: latest.get(base.nodeId)?.path ?? [],
              };
              latest.set(made.nodeId, made);
              everOn.set(made.nodeId, new Set([...(everOn.get(made.nodeId) ?? []), ...made.path]));
              return made;
            });
            const next = seq + (batch[0]?.advance ?? 0);
            await log.append(entries, next);
            seq = next;
            expectSame(log, latest, seq);
            if (batch[0]?.settle) await log.settled();
          }
          expect(log.cursor).toBe(seq);
          // Every relay a node was ever served by is still named by its latest entry: it learns to drop it.
          for (const [node, relays] of everOn) {
            const held = log.latest(node);
            for (const relay of relays)
              expect([relay, held?.path.includes(relay) || held?.previousPath.includes(relay)]).toEqual([
                relay,
                true,
              ]);
          }
          await log.close();
          const reopened = await FeedLog.open(file);
          expect(reopened.cursor).toBe(seq);
          expectSame(reopened, latest, seq);
          await reopened.close();
        },
      ),
      { numRuns: 60 },
    );
  });
});
