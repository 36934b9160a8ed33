export * from './lib/config-store';
export { PostgresConfigStore } from './lib/postgres/postgres-config-store';
export type { PostgresConfigStoreOptions } from './lib/postgres/postgres-config-store';
export { MemoryConfigDatabase, MemoryConfigStore } from './lib/memory/memory-config-store';
export type { MemoryConfigStoreOptions } from './lib/memory/memory-config-store';
export { OutboxPublisher } from './lib/outbox-publisher';
export * from './lib/http/http-snapshot-source';
