/**
 * The messaging port: the only view of the event bus that the rest of Policygen has.
 * Adapters (Kafka today, an in-process bus for the embedded default) implement it, so the client
 * library behind it can be swapped without touching a service.
 */

export type MessageHeaders = Readonly<Record<string, string>>;

export interface OutgoingMessage {
  /** Messages with the same key land in the same partition and keep their relative order. */
  readonly key: string | null;
  readonly value: Buffer | string;
  readonly headers?: MessageHeaders;
}

export interface IncomingMessage {
  readonly topic: string;
  readonly partition: number;
  /** A 64-bit offset, as a decimal string. */
  readonly offset: string;
  readonly key: string | null;
  readonly value: Buffer;
  readonly headers: MessageHeaders;
  /** Milliseconds since the epoch, as stamped by the producer or the broker. */
  readonly timestamp: number;
}

/** Consecutive messages of one partition. */
export interface MessageBatch {
  readonly topic: string;
  readonly partition: number;
  readonly messages: readonly IncomingMessage[];
}

export type BatchHandler = (batch: MessageBatch) => Promise<void>;

/** Topic name → partitions currently assigned to one consumer-group member. */
export type PartitionAssignment = Readonly<Record<string, readonly number[]>>;

export interface TopicSpec {
  readonly name: string;
  readonly partitions: number;
  readonly replicationFactor?: number;
  readonly config?: Readonly<Record<string, string>>;
}

export interface MessagingAdmin {
  /** Creates the topics that do not exist yet; existing ones are left as they are. */
  createTopics(topics: readonly TopicSpec[]): Promise<void>;
  listTopics(): Promise<string[]>;
  /** Number of partitions of an existing topic. */
  partitionCount(topic: string): Promise<number>;
  deleteTopics(names: readonly string[]): Promise<void>;
  close(): Promise<void>;
}

export interface ProducerOptions {
  /** Broker-side de-duplication of retried sends, and per-partition order under retries. */
  readonly idempotent?: boolean;
}

export interface MessageProducer {
  /** Resolves once every message is acknowledged by all in-sync replicas. */
  send(topic: string, messages: readonly OutgoingMessage[]): Promise<void>;
  close(): Promise<void>;
}

export interface ConsumerOptions {
  readonly groupId: string;
  readonly topics: readonly string[];
  /** Where a group with no committed offset starts: the oldest message (true) or new ones only. */
  readonly fromBeginning?: boolean;
  /**
   * How long the group waits for a silent member before giving its partitions to the others
   * (default 30 s): shorter means faster failover after a crash, at the cost of false alarms.
   */
  readonly sessionTimeoutMs?: number;
}

export interface MessageConsumer {
  /**
   * Starts delivery. Batches of one partition arrive in order, one at a time; a batch's offsets are
   * committed only after the handler resolves (at-least-once). A handler that throws gets the same
   * batch again.
   */
  start(handler: BatchHandler): Promise<void>;
  /** Called with this member's partitions after every group rebalance. */
  onAssignment(listener: (assignment: PartitionAssignment) => void): void;
  close(): Promise<void>;
}

export interface Messaging {
  createAdmin(): Promise<MessagingAdmin>;
  createProducer(options?: ProducerOptions): Promise<MessageProducer>;
  createConsumer(options: ConsumerOptions): Promise<MessageConsumer>;
}
