// The event contract: topics, zod schemas, the events' TypeScript types.
export * from './contract';
// Consuming events.
export type {
  ConsumerStats,
  EventConsumerOptions,
  EventContext,
  EventHandler,
  SubscribedEvent,
} from './consumer/event-consumer';
export { EventConsumer } from './consumer/event-consumer';
export type { RetryPolicy } from './consumer/retry-policy';
export { DEFAULT_RETRY_POLICY, backoffDelay, retryPolicy } from './consumer/retry-policy';
export type { SdkLogger } from './consumer/logger';
export type { Connection } from './connection';
export { connectionFromEnvironment, transportFor } from './connection';
export type { CreateConsumerOptions } from './create-consumer';
export { createConsumer } from './create-consumer';
export type { KafkaConnection } from './transport/kafka-transport';
export { quietKafkajsRequestQueues, requestTimeoutSweep } from './transport/kafkajs-request-queue';
export type { EventStreamConnection } from './transport/event-stream-transport';
export type { PositionStore } from './transport/position-store';
export { MemoryPositionStore } from './transport/position-store';
export type {
  EventTransport,
  RawMessage,
  RawBatch,
  BatchControl,
  TransportSubscription,
  DeadLetterDetails,
} from './transport/event-transport';
export { DEAD_LETTER_HEADERS, deadLetterHeaders, deadLetterTopicOf } from './transport/event-transport';
// At-least-once made safe: identities and the last handled revision per subject.
export type { EventIdentity } from './idempotency/event-identity';
export { eventIdentity, isNewer } from './idempotency/event-identity';
export type { IdempotencyStore } from './idempotency/idempotency-store';
export { MemoryIdempotencyStore, onlyNewer } from './idempotency/idempotency-store';
export type { RedisScripting } from './idempotency/redis-idempotency-store';
export { RedisIdempotencyStore } from './idempotency/redis-idempotency-store';
// Bundles: their files by digest, and every node's current one.
export type { BundleFilesOptions } from './bundles/bundle-files';
export {
  BlobFetchError,
  BundleFiles,
  MANIFEST_PATH,
  MANIFEST_HEAD_PATH,
  MANIFEST_PROPERTIES_PATH,
  isManifestPartPath,
} from './bundles/bundle-files';
export type { ReadLatestBundlesOptions } from './latest/latest-bundles';
export { readLatestBundles } from './latest/latest-bundles';
