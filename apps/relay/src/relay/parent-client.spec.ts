import { createServer } from 'node:http';
import type { AddressInfo, Server } from 'node:net';
import { Registry } from 'prom-client';
import { ParentClient, RefusedByParentError } from './parent-client';

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

describe('ParentClient on its kept-alive connections', () => {
  let server: ReturnType<typeof createServer>;
  let url: string;
  const seen: { port: number; authorization?: string; type?: string; body: string }[] = [];

  beforeAll(async () => {
    server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      request.on('end', () => {
        seen.push({
          port: request.socket.remotePort ?? 0,
          ...(request.headers.authorization ? { authorization: request.headers.authorization } : {}),
          ...(request.headers['content-type'] ? { type: request.headers['content-type'] } : {}),
          body,
        });
        response.statusCode = body.includes('"refuse"') ? 400 : 202;
        response.end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const confirmation = (nodeId: string) =>
    ({
      relayId: 'root',
      nodeId,
      hash: HASH,
      revision: 3,
      committedAt: '2026-11-25T10:00:00.000Z',
      generatedAt: '2026-11-25T10:00:01.000Z',
      distributedAt: '2026-11-25T10:00:02.000Z',
      confirmedAt: '2026-11-25T10:00:03.000Z',
    }) as const;

  it('sends its credential and JSON, one connection for successive requests, and again after the parent dropped it', async () => {
    const client = new ParentClient(url, 'root', CREDENTIAL);
    await client.confirm([confirmation('n1')]);
    await client.confirm([confirmation('n2')]);
    server.closeAllConnections();
    await client.confirm([confirmation('n3')]);
    client.close();
    expect(seen.map((request) => JSON.parse(request.body).confirmations[0].nodeId)).toEqual([
      'n1',
      'n2',
      'n3',
    ]);
    expect(new Set(seen.map((request) => request.authorization))).toEqual(new Set([`Bearer ${CREDENTIAL}`]));
    expect(new Set(seen.map((request) => request.type))).toEqual(new Set(['application/json']));
    expect(seen[1]?.port).toBe(seen[0]?.port);
    expect(seen[2]?.port).not.toBe(seen[0]?.port);
  });

  it('says a refusal is one: a 4xx other than 401, 408 and 429 is not sent again', async () => {
    const client = new ParentClient(url, 'root', CREDENTIAL);
    await expect(client.confirm([{ ...confirmation('n4'), nodeId: 'refuse' }])).rejects.toBeInstanceOf(
      RefusedByParentError,
    );
    client.close();
  });
});
