export * from './lib/config-store';
export { PostgresConfigStore } from './lib/postgres/postgres-config-store';
export type { PostgresConfigStoreOptions } from './lib/postgres/postgres-config-store';
export { OutboxPublisher } from './lib/outbox-publisher';
