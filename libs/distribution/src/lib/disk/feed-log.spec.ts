import { createHash } from 'node:crypto';
import { appendFileSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FeedEntry } from '../feed';
import { FeedLog } from './feed-log';

const AT = '2026-11-24T10:00:00.000Z';
const digestOf = (content: string): string => createHash('sha256').update(content).digest('hex');

/** A node's entry as the fleet's are: 34 files, 27 of them shared by a quarter of the nodes. */
function entry(seq: number, node: number, fileCount = 34): FeedEntry {
  const files = Array.from({ length: fileCount }, (_, index) => ({
    path: `rules/cfengine-community/file-${String(index).padStart(2, '0')}.cf`,
    sha256: digestOf(
      index < 7 ? `node ${node} file ${index} at ${seq}` : `shared ${index} variant ${node % 4}`,
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
    expect(statSync(file).size).toBeLessThan(grown * 1.1);
    await log.close();
    const reopened = await FeedLog.open(file);
    expect(reopened.nodeCount).toBe(nodes);
    expect(reopened.latest('node-5')?.seq).toBe(nodes + 6);
    await reopened.close();
  });
});
