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

describe('RedisBundleCache pipelines', () => {
  it('hands a slice’s pipeline to its socket in one write, not one per 16 KiB', async () => {
    const { redisUrl } = getTestInfrastructure();
    const prefix = `test:${randomBytes(6).toString('hex')}:`;
    // The client's socket, as node-redis makes it: its writes handed to libuv are counted.
    const sockets: Socket[] = [];
    const connect = jest.spyOn(net, 'createConnection').mockImplementation(((...args: unknown[]) => {
      const socket = (connectOriginal as (...given: unknown[]) => Socket)(...args);
      sockets.push(socket);
      return socket;
    }) as typeof net.createConnection);
    const cache = await RedisBundleCache.connect({ url: redisUrl, prefix });
    connect.mockRestore();
    const admin = createClient({ url: redisUrl });
    await admin.connect();
    try {
      const [socket] = sockets as [Socket & { _writev: Socket['_writev']; _write: Socket['_write'] }];
      let writes = 0;
      const writev = socket._writev?.bind(socket);
      const write = socket._write.bind(socket);
      socket._writev = (chunks, callback) => {
        writes++;
        writev?.(chunks, callback);
      };
      socket._write = (chunk, encoding, callback) => {
        writes++;
        write(chunk, encoding, callback);
      };
      // 200 blobs of 5 KB: about a slice's worth, sixty times the default high-water mark.
      const blobs = Array.from({ length: 200 }, (_, index) => ({
        sha256: index.toString(16).padStart(64, '0'),
        content: `${'x'.repeat(5_000)}${index}`,
      }));
      expect(await cache.putBlobs(blobs)).toBe(200);
      expect(writes).toBe(1);
      expect(await admin.get(`${prefix}blob:${'0'.repeat(62)}c7`)).toBe(`${'x'.repeat(5_000)}199`);
    } finally {
      const keys = await admin.keys(`${prefix}*`);
      if (keys.length > 0) await admin.del(keys);
      await admin.close();
      await cache.close();
    }
  });
});
