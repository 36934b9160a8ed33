import { describeBundleCacheContract } from '../bundle-cache-contract';
import type { NodeBundleRecord } from '../bundle-cache';
import { MemoryBundleCache, MemoryBundleStore } from './memory-bundle-cache';

describeBundleCacheContract('MemoryBundleCache', async () => {
  const store = new MemoryBundleStore();
  const cache = new MemoryBundleCache({ store });
  return {
    cache,
    flush: async () => store.flush(),
    dispose: () => cache.close(),
  };
});

function record(nodeId: string, revision: number): NodeBundleRecord {
  return {
    nodeId,
    revision,
    hash: `sha256:${String(revision).repeat(64)}`,
    committedAt: '2026-11-21T00:00:00.000Z',
    digests: ['a'.repeat(64)],
    manifestSha256: String(revision).repeat(64),
  };
}

describe('MemoryBundleCache, beyond the contract', () => {
  it('is shared by the caches on one store, as generator instances share a Redis, and outlives them', async () => {
    const store = new MemoryBundleStore();
    const one = new MemoryBundleCache({ store });
    const other = new MemoryBundleCache({ store });
    expect(await one.recordBundles([record('n1', 2)])).toEqual([true]);
    expect(await other.recordBundles([record('n1', 1)])).toEqual([false]);
    expect(await other.claimFreshness()).toBe(true);
    expect(await one.claimFreshness()).toBe(false);
    await one.close();
    await expect(one.nodeBundle('n1')).rejects.toThrow('the bundle cache is closed');
    expect((await other.nodeBundle('n1'))?.revision).toBe(2);
  });

  it('hands out copies: what a reader changes is not what the cache holds', async () => {
    const cache = new MemoryBundleCache();
    const written = record('n1', 1);
    await cache.recordBundles([written]);
    (written.digests as string[]).push('b'.repeat(64));
    const read = await cache.nodeBundle('n1');
    (read?.digests as string[]).splice(0, 1);
    const hashes = await cache.nodeHashes();
    Object.assign(hashes.get('n1') ?? {}, { hash: 'changed after the read' });
    expect((await cache.nodeHashes()).get('n1')?.hash).toBe(written.hash);
    expect(await cache.nodeBundle('n1')).toEqual(record('n1', 1));
  });
});
