import { randomBytes } from 'node:crypto';
import { createClient } from 'redis';
import { getTestInfrastructure } from '@policygen/testing-infra';
import { describeBundleCacheContract } from '../bundle-cache-contract';
import { RedisBundleCache } from './redis-bundle-cache';

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
