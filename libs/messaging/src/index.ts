export * from './lib/messaging';
export {
  createKafkaMessaging,
  type KafkaMessagingOptions,
  type MessagingLogEntry,
} from './lib/kafka/kafka-messaging';
export { partitionForKey } from './lib/partitioning/partition-for-key';
export {
  MessagingContext,
  MessagingTransport,
  type EventPatternExtras,
  type MessagingTransportOptions,
} from './lib/nest/messaging-transport';
