export * from './lib/bundle-cache';
export { RedisBundleCache } from './lib/redis/redis-bundle-cache';
export type { RedisBundleCacheOptions } from './lib/redis/redis-bundle-cache';
export { MemoryBundleCache, MemoryBundleStore } from './lib/memory/memory-bundle-cache';
export type { MemoryBundleCacheOptions } from './lib/memory/memory-bundle-cache';
