import { randomBytes } from 'node:crypto';
import net from 'node:net';
import type { Socket } from 'node:net';
import { createClient } from 'redis';
import { getTestInfrastructure } from '@policygen/testing-infra';
import { describeBundleCacheContract } from '../bundle-cache-contract';
import { RedisBundleCache } from './redis-bundle-cache';

const connectOriginal = net.createConnection;

/** The bundle cache on the harness's real Redis, each test under a key prefix of its own. */
describeBundleCacheContract('RedisBundleCache', async () => {
  const { redisUrl } = getTestInfrastructure();
  const prefix = `test:${randomBytes(6).toString('hex')}:`;
  const cache = await RedisBundleCache.connect({ url: redisUrl, prefix });
  const deleteKeys = async (): Promise<void> => {
    const client = createClient({ url: redisUrl });
    await client.connect();
    const keys = await client.keys(`${prefix}*`);
    if (keys.length > 0) await client.del(keys);
    await client.close();
  };
  return {
    cache,
    flush: deleteKeys,
    async dispose() {
      await cache.close();
      await deleteKeys();
    },
  };
});

/** A cache under a key prefix of its own and an admin client on the same Redis, both closed and the keys dropped after. */
async function withCache(
  test: (cache: RedisBundleCache, admin: ReturnType<typeof createClient>, prefix: string) => Promise<void>,
): Promise<void> {
  const { redisUrl } = getTestInfrastructure();
  const prefix = `test:${randomBytes(6).toString('hex')}:`;
  const cache = await RedisBundleCache.connect({ url: redisUrl, prefix });
  const admin = createClient({ url: redisUrl });
  await admin.connect();
  try {
    await test(cache, admin, prefix);
  } finally {
    const keys = await admin.keys(`${prefix}*`);
    if (keys.length > 0) await admin.del(keys);
    await admin.close();
    await cache.close();
  }
}

describe('RedisBundleCache scripts', () => {
  it('records and removes by the scripts’ digests, and gives Redis the scripts again after it lost them', () =>
    withCache(async (cache, admin, prefix) => {
      const record = (revision: number) => ({
        nodeId: 'n1',
        hash: `sha256:${'a'.repeat(63)}${revision}`,
        revision,
        committedAt: '2026-11-26T00:00:00.000Z',
        digests: ['b'.repeat(64)],
        manifestSha256: 'c'.repeat(64),
      });
      // As after a restart of Redis: it knows no script.
      await admin.scriptFlush();
      expect(await cache.recordBundles([record(1)])).toEqual([true]);
      await admin.scriptFlush();
      expect(await cache.recordBundles([record(2), record(1)])).toEqual([true, false]);
      expect((await cache.nodeHashes(['n1'])).get('n1')).toEqual({ revision: 2, hash: record(2).hash });
      await admin.scriptFlush();
      expect(await cache.removeNodes([{ nodeId: 'n1', revision: 3 }])).toEqual([true]);
      expect(await cache.nodeHashes(['n1'])).toEqual(new Map());
      // The blob the record named lost its last reference: it is free to collect.
      expect(await admin.hGet(`${prefix}blob-refs`, 'b'.repeat(64))).toBe('0');
    }));
});

describe('RedisBundleCache records of an earlier version', () => {
  it('reads a record that lists its files as JSON, and lets go of its blobs when it is replaced', () =>
    withCache(async (cache, admin, prefix) => {
      const digest = (letter: string): string => letter.repeat(64);
      // As the earlier script wrote it: the file list as JSON, its blobs and manifest counted.
      await admin.hSet(`${prefix}node:n1`, {
        revision: '1',
        hash: `sha256:${digest('h')}`,
        committedAt: '2026-11-26T00:00:00.000Z',
        files: JSON.stringify([
          { path: 'rules/a.cf', sha256: digest('a') },
          { path: 'rules/b.cf', sha256: digest('b') },
        ]),
        manifestSha256: digest('m'),
        counted: '1',
      });
      await admin.hSet(`${prefix}blob-refs`, { [digest('a')]: '1', [digest('b')]: '1', [digest('m')]: '1' });
      await admin.hSet(`${prefix}nodes`, 'n1', `1 sha256:${digest('h')}`);
      expect((await cache.nodeBundle('n1'))?.digests).toEqual([digest('a'), digest('b')]);

      expect(
        await cache.recordBundles([
          {
            nodeId: 'n1',
            hash: `sha256:${digest('i')}`,
            revision: 2,
            committedAt: '2026-11-26T00:00:01.000Z',
            digests: [digest('b'), digest('c')],
            manifestSha256: digest('n'),
          },
        ]),
      ).toEqual([true]);
      const refs = await admin.hGetAll(`${prefix}blob-refs`);
      expect(refs).toEqual({
        [digest('a')]: '0',
        [digest('b')]: '1',
        [digest('m')]: '0',
        [digest('c')]: '1',
        [digest('n')]: '1',
      });
      expect((await admin.zRange(`${prefix}blob-free`, 0, -1)).sort()).toEqual([digest('a'), digest('m')]);
      expect(await admin.hGet(`${prefix}node:n1`, 'files')).toBeNull();
    }));
});

/** A cache on the harness's Redis whose socket counts the writes handed to libuv and the reads it got. */
async function countingCache(): Promise<{
  cache: RedisBundleCache;
  prefix: string;
  counts: { writes: number; reads: number };
}> {
  const { redisUrl } = getTestInfrastructure();
  const prefix = `test:${randomBytes(6).toString('hex')}:`;
  const sockets: Socket[] = [];
  const connect = jest.spyOn(net, 'createConnection').mockImplementation(((...args: unknown[]) => {
    const socket = (connectOriginal as (...given: unknown[]) => Socket)(...args);
    sockets.push(socket);
    return socket;
  }) as typeof net.createConnection);
  const cache = await RedisBundleCache.connect({ url: redisUrl, prefix });
  connect.mockRestore();
  const [socket] = sockets as [Socket & { _writev: Socket['_writev']; _write: Socket['_write'] }];
  const counts = { writes: 0, reads: 0 };
  const writev = socket._writev?.bind(socket);
  const write = socket._write.bind(socket);
  socket._writev = (chunks, callback) => {
    counts.writes++;
    writev?.(chunks, callback);
  };
  socket._write = (chunk, encoding, callback) => {
    counts.writes++;
    write(chunk, encoding, callback);
  };
  socket.on('data', () => counts.reads++);
  return { cache, prefix, counts };
}

describe('RedisBundleCache pipelines', () => {
  const admin = createClient({ url: getTestInfrastructure().redisUrl });
  beforeAll(() => admin.connect());
  afterAll(() => admin.close());

  it('hands a slice’s pipeline to its socket in one write, not one per 16 KiB', async () => {
    const { cache, prefix, counts } = await countingCache();
    try {
      // 200 blobs of 5 KB: about a slice's worth, sixty times the default high-water mark.
      const blobs = Array.from({ length: 200 }, (_, index) => ({
        sha256: index.toString(16).padStart(64, '0'),
        content: `${'x'.repeat(5_000)}${index}`,
      }));
      // The first call of a script on a server teaches it the script (two writes more).
      await cache.putBlobs([{ sha256: 'f'.repeat(64), content: 'known' }]);
      counts.writes = 0;
      expect(await cache.putBlobs(blobs)).toBe(200);
      expect(counts.writes).toBe(1);
      expect(await admin.get(`${prefix}blob:${'0'.repeat(62)}c7`)).toBe(`${'x'.repeat(5_000)}199`);
    } finally {
      const keys = await admin.keys(`${prefix}*`);
      if (keys.length > 0) await admin.del(keys);
      await cache.close();
    }
  });

  it('gets one answer for a slice’s records, however many pieces Redis reads the request in', async () => {
    const { cache, prefix, counts } = await countingCache();
    try {
      // 300 records naming 35 files each: ~700 KB, which Redis reads 16 KiB at a time.
      const records = Array.from({ length: 300 }, (_, index) => ({
        nodeId: `n${index}`,
        revision: 1,
        hash: `sha256:${index.toString(16).padStart(64, '0')}`,
        committedAt: '2026-12-01T00:00:00.000Z',
        digests: Array.from({ length: 35 }, (_, file) => (index * 35 + file).toString(16).padStart(64, '0')),
        manifestSha256: 'e'.repeat(64),
      }));
      await cache.recordBundles(records.slice(0, 1));
      counts.reads = 0;
      expect(await cache.recordBundles(records)).toEqual(records.map(() => true));
      expect(counts.reads).toBe(1);
      expect((await cache.nodeHashes(['n299'])).get('n299')?.hash).toBe(records[299]?.hash);
      counts.reads = 0;
      expect(await cache.removeNodes(records.map(({ nodeId }) => ({ nodeId, revision: 2 })))).toEqual(
        records.map(() => true),
      );
      expect(counts.reads).toBe(1);
    } finally {
      const keys = await admin.keys(`${prefix}*`);
      if (keys.length > 0) await admin.del(keys);
      await cache.close();
    }
  });
});
