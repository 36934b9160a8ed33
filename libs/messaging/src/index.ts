export * from './lib/messaging';
export {
  createKafkaMessaging,
  type KafkaMessagingOptions,
  type MessagingLogEntry,
} from './lib/kafka/kafka-messaging';
export {
  createInProcessMessaging,
  type InProcessMessagingOptions,
  type InProcessMessaging,
  type LoggedMessage,
  type MessageLog,
} from './lib/in-process/in-process-messaging';
export { partitionForKey } from './lib/partitioning/partition-for-key';
export {
  MessagingContext,
  MessagingTransport,
  type EventPatternExtras,
  type MessagingTransportOptions,
} from './lib/nest/messaging-transport';
export * from './lib/dead-letters';
export { TransientFailure, isTransientFailure, failureText } from './lib/failures/transient-failure';
export {
  deliverWithRetryBudget,
  type DeliveryFailure,
  type DeliveryObserver,
  type RetryBudget,
} from './lib/failures/retry-budget';
export { DeliveryMonitor, type WaitingPartition } from './lib/failures/delivery-monitor';
export {
  createRetryingConsumer,
  DeliveryStopped,
  type RetryingConsumerOptions,
} from './lib/failures/retrying-consumer';
export {
  DeadLetterArchive,
  REPLAY_MARKER_HEADERS,
  type DeadLetter,
  type DeadLetterArchiveOptions,
  type DeadLetterOrigin,
  type DeadLetterPage,
  type ReplayOutcome,
} from './lib/dead-letter-archive';
export { produceEncodings } from './lib/kafka/produce-request';
