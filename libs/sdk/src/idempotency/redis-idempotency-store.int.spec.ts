import { randomUUID } from 'node:crypto';
import { createClient } from 'redis';
import { getTestInfrastructure } from '@policygen/testing-infra';
import { RedisIdempotencyStore } from './redis-idempotency-store';

describe('RedisIdempotencyStore against a real Redis', () => {
  const redis = createClient({ url: getTestInfrastructure().redisUrl });
  const hashKey = `policygen:sdk-test:${randomUUID()}`;

  beforeAll(() => redis.connect());
  afterAll(async () => {
    await redis.del(hashKey);
    await redis.quit();
  });

  it('records a revision only if it is newer, atomically under concurrent members', async () => {
    const members = [new RedisIdempotencyStore(redis, hashKey), new RedisIdempotencyStore(redis, hashKey)];
    expect(await members[0]?.lastRevision('node:n1')).toBeUndefined();
    const revisions = [5, 3, 9, 9, 1, 7, 2, 8];
    const recorded = await Promise.all(
      revisions.map((revision, index) => members[index % 2]?.record({ key: 'node:n1', revision })),
    );
    expect(await members[1]?.lastRevision('node:n1')).toBe(9);
    // Exactly one of the two 9s won; nothing recorded after it moved it back.
    expect(recorded.filter((value, index) => value && revisions[index] === 9)).toHaveLength(1);
    expect(await members[0]?.record({ key: 'node:n1', revision: 9 })).toBe(false);
    expect(await members[0]?.record({ key: 'node:n1', revision: 10 })).toBe(true);
    expect(await members[0]?.lastRevision('node:n2')).toBeUndefined();
  });
});
