import { LRUCache } from 'lru-cache';

/**
 * An LRU of at most `limit` entries that takes memory as it fills. lru-cache's `max` allocates its
 * key, value and link arrays for `limit` entries up front: the generator's limits are sized for
 * 100,000 nodes, so every engine paid ~100 ms and ~15 MB for them on a fleet of any size (an
 * instance holding a share, a small fleet, the benchmark's fresh engines). Counting entries by
 * `maxSize` bounds it the same way without the allocation.
 */
export function countBoundedCache<K extends NonNullable<unknown>, V extends NonNullable<unknown>>(
  limit: number,
): LRUCache<K, V> {
  return new LRUCache<K, V>({ maxSize: limit, sizeCalculation: () => 1 });
}
