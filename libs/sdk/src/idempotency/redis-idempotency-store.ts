import type { EventIdentity } from './event-identity';
import type { IdempotencyStore } from './idempotency-store';

/**
 * What the store needs of a Redis client: node-redis 4 and 5 (`createClient()`) fit as they are.
 * The SDK does not depend on a Redis client; bring your own.
 */
export interface RedisScripting {
  hGet(key: string, field: string): Promise<string | null | undefined | object>;
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
}

// Compare-and-set in one step: concurrent members of a group never move a subject backwards.
const RECORD_IF_NEWER = `
local last = redis.call('HGET', KEYS[1], ARGV[1])
if last and tonumber(last) >= tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1`;

/** The last handled revision per subject in one Redis hash, shared by every member of a group. */
export class RedisIdempotencyStore implements IdempotencyStore {
  constructor(
    private readonly redis: RedisScripting,
    /** The hash's key: one per consumer group (e.g. `policygen:handled:<group>`). */
    private readonly hashKey: string,
  ) {
    if (!hashKey) throw new Error('a Redis idempotency store needs a key');
  }

  async lastRevision(key: string): Promise<number | undefined> {
    const value = await this.redis.hGet(this.hashKey, key);
    return typeof value === 'string' ? Number(value) : undefined;
  }

  async record(identity: EventIdentity): Promise<boolean> {
    const recorded = await this.redis.eval(RECORD_IF_NEWER, {
      keys: [this.hashKey],
      arguments: [identity.key, String(identity.revision)],
    });
    return Number(recorded) === 1;
  }
}
