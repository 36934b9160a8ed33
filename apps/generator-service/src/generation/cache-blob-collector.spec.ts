import { Registry } from 'prom-client';
import { MemoryBundleCache } from '@policygen/cache';
import { CacheBlobCollector } from './cache-blob-collector';

describe('CacheBlobCollector', () => {
  const digest = (letter: string): string => letter.repeat(64);

  it('deletes, once their grace period is over, the blobs no bundle names, and counts them', async () => {
    const cache = new MemoryBundleCache();
    const registry = new Registry();
    let now = Date.now();
    const collector = new CacheBlobCollector({ cache, graceMs: 60_000, registry, now: () => now });
    await cache.putBlobs(['a', 'b', 'm'].map((letter) => ({ sha256: digest(letter), content: letter })));
    await cache.recordBundles([
      {
        nodeId: 'n1',
        revision: 1,
        hash: `sha256:${digest('h')}`,
        committedAt: '2026-11-24T00:00:00.000Z',
        digests: [digest('a')],
        manifestSha256: digest('m'),
      },
    ]);

    expect(await collector.sweep()).toBe(0);
    now += 120_000;
    expect(await collector.sweep()).toBe(1);
    expect(
      (await cache.getBlobs(['a', 'b', 'm'].map(digest))).map((blob) => blob?.toString() ?? null),
    ).toEqual(['a', null, 'm']);
    const metric = await registry.getSingleMetric('policygen_generator_cache_blobs_collected_total')?.get();
    expect(metric?.values[0]?.value).toBe(1);
  });
});
