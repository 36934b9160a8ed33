import { randomBytes } from 'node:crypto';
import { createClient } from 'redis';
import { getTestInfrastructure } from '@policygen/testing-infra';
import type { NodeBundleRecord } from '../bundle-cache';
import { RedisBundleCache } from './redis-bundle-cache';

/** The bundle cache on the harness's real Redis, each test under a key prefix of its own. */

function record(nodeId: string, revision: number, hash: string): NodeBundleRecord {
  return {
    nodeId,
    revision,
    hash: `sha256:${hash.repeat(64).slice(0, 64)}`,
    committedAt: '2026-11-21T00:00:00.000Z',
    files: [{ path: 'rules/cfengine-community/promises.cf', sha256: 'a'.repeat(64) }],
    manifest: { nodeId, configRevision: revision },
  };
}

describe('RedisBundleCache', () => {
  const { redisUrl } = getTestInfrastructure();
  let cache: RedisBundleCache;
  let prefix: string;

  beforeEach(async () => {
    prefix = `test:${randomBytes(6).toString('hex')}:`;
    cache = await RedisBundleCache.connect({ url: redisUrl, prefix });
  });
  afterEach(async () => {
    await cache.close();
    const client = createClient({ url: redisUrl });
    await client.connect();
    const keys = await client.keys(`${prefix}*`);
    if (keys.length > 0) await client.del(keys);
    await client.close();
  });

  it('stores a blob once, however many times it is put', async () => {
    const blob = { sha256: 'b'.repeat(64), content: 'bundle common x {}' };
    expect(await cache.putBlobs([blob, { sha256: 'c'.repeat(64), content: 'other' }])).toBe(2);
    expect(await cache.putBlobs([blob, { ...blob, content: 'never overwritten' }])).toBe(0);
    expect(await cache.getBlob(blob.sha256)).toBe('bundle common x {}');
    expect(await cache.getBlob('d'.repeat(64))).toBeNull();
  });

  it('records bundles forward only, and removals leave a tombstone that older writes cannot undo', async () => {
    expect(await cache.recordBundles([record('n1', 3, '1'), record('n2', 3, '2')])).toEqual([true, true]);
    expect(await cache.recordBundles([record('n1', 2, '9')])).toEqual([false]);
    expect(await cache.recordBundles([record('n1', 3, '4')])).toEqual([true]);
    expect(await cache.nodeBundle('n1')).toEqual(record('n1', 3, '4'));
    expect([...(await cache.nodeHashes())].sort()).toEqual([
      ['n1', { revision: 3, hash: record('n1', 3, '4').hash }],
      ['n2', { revision: 3, hash: record('n2', 3, '2').hash }],
    ]);

    expect(await cache.removeNodes([{ nodeId: 'n2', revision: 2 }])).toEqual([false]);
    expect(await cache.removeNodes([{ nodeId: 'n2', revision: 5 }])).toEqual([true]);
    expect(await cache.nodeBundle('n2')).toBeNull();
    expect(await cache.recordBundles([record('n2', 4, '7')])).toEqual([false]);
    expect([...(await cache.nodeHashes()).keys()]).toEqual(['n1']);
    expect([...(await cache.nodeHashes(['n2', 'n1', 'n9']))]).toEqual([
      ['n1', { revision: 3, hash: record('n1', 3, '4').hash }],
    ]);
    expect(await cache.recordBundles([record('n2', 6, '8')])).toEqual([true]);
    expect((await cache.nodeBundle('n2'))?.hash).toBe(record('n2', 6, '8').hash);
  });

  it('says the cache is fresh once, until it is flushed', async () => {
    expect(await cache.claimFreshness()).toBe(true);
    expect(await cache.claimFreshness()).toBe(false);
    const client = createClient({ url: redisUrl });
    await client.connect();
    await client.del(await client.keys(`${prefix}*`));
    await client.close();
    expect(await cache.claimFreshness()).toBe(true);
  });
});
