export * from './lib/bundle-cache';
export { RedisBundleCache } from './lib/redis/redis-bundle-cache';
export type { RedisBundleCacheOptions } from './lib/redis/redis-bundle-cache';
