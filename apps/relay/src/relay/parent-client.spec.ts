import { createServer } from 'node:http';
import type { AddressInfo, Server } from 'node:net';
import { Registry } from 'prom-client';
import { ParentClient } from './parent-client';

const HASH = `sha256:${'a'.repeat(64)}`;
const CREDENTIAL = `relay.root.${'c'.repeat(43)}`;

function entry(seq: number, nodeId: string): Record<string, unknown> {
  return {
    seq,
    nodeId,
    path: ['root'],
    previousPath: [],
    revision: 3,
    bundle: {
      hash: HASH,
      revision: 3,
      committedAt: '2026-11-25T10:00:00.000Z',
      generatedAt: '2026-11-25T10:00:01.000Z',
      distributedAt: '2026-11-25T10:00:02.000Z',
      files: [{ path: 'policy-manifest.json', sha256: 'b'.repeat(64) }],
      nodeKey: null,
    },
  };
}

describe('ParentClient.feed', () => {
  let server: Server;
  let url: string;
  let page: unknown;

  beforeAll(async () => {
    server = createServer((_request, response) => {
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify(page));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('refuses an entry that does not read as one, alone: the others and the cursor go on', async () => {
    const broken = { ...entry(2, 'n-broken'), path: 'root' };
    page = {
      entries: [entry(1, 'n1'), broken, { seq: 'three' }, entry(4, 'n4')],
      next: 4,
      head: { seq: 9, revision: 3 },
    };
    const registry = new Registry();
    const read = await new ParentClient(url, 'root', CREDENTIAL, registry).feed(0, 0, 10);
    expect(read.entries.map((each) => each.nodeId)).toEqual(['n1', 'n4']);
    expect(read.next).toBe(4);
    expect(read.head).toEqual({ seq: 9, revision: 3 });
    expect(read.refused).toEqual([
      { nodeId: 'n-broken', problem: 'entry 1: path: Invalid input: expected array, received string' },
      { nodeId: null, problem: expect.stringMatching(/^entry 2: seq: /) },
    ]);
    expect(await registry.getSingleMetricAsString('policygen_relay_feed_entries_refused_total')).toMatch(
      / 2$/m,
    );
  });

  it('still refuses a page that is no feed page at all', async () => {
    page = { entries: 'none' };
    await expect(new ParentClient(url, 'root', CREDENTIAL).feed(0, 0, 10)).rejects.toThrow(
      /is not a feed page/,
    );
  });
});
