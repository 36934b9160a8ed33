/**
 * The messaging port: the only view of the event bus that the rest of Policygen has.
 * Adapters (Kafka today, an in-process bus for the embedded default) implement it, so the client
 * library behind it can be swapped without touching a service.
 */

export type MessageHeaders = Readonly<Record<string, string>>;

export interface OutgoingMessage {
  /** Messages with the same key land in the same partition and keep their relative order. */
  readonly key: string | null;
  /** `null` is a tombstone: on a compacted topic it deletes its key once compaction runs. */
  readonly value: Buffer | string | null;
  readonly headers?: MessageHeaders;
}

export interface IncomingMessage {
  readonly topic: string;
  readonly partition: number;
  /** A 64-bit offset, as a decimal string. */
  readonly offset: string;
  readonly key: string | null;
  /** Empty for a tombstone. */
  readonly value: Buffer;
  /** The message was sent with no value (`null`): its key's deletion on a compacted topic. */
  readonly tombstone?: true;
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

/** What a handler may tell its consumer, and ask of it, while it works on a batch. */
export interface BatchControl {
  /**
   * The batch's messages up to this offset are dealt with: their offsets are committed even if the
   * handler throws later, and a batch given again starts after them.
   */
  handledUpTo(offset: string): void;
  /** Tells the group this member is alive, during a long handler call (a no-op where there is no group protocol). */
  heartbeat(): Promise<void>;
  /** False once the consumer is closing or the partition is no longer this member's: start nothing new. */
  isRunning(): boolean;
}

export type BatchHandler = (batch: MessageBatch, control: BatchControl) => Promise<void>;

/** Topic name → partitions currently assigned to one consumer-group member. */
export type PartitionAssignment = Readonly<Record<string, readonly number[]>>;

export interface TopicSpec {
  readonly name: string;
  readonly partitions: number;
  readonly replicationFactor?: number;
  readonly config?: Readonly<Record<string, string>>;
}

/** How far a consumer group is behind on one partition: messages after its committed offset. */
export interface PartitionLag {
  readonly topic: string;
  readonly partition: number;
  /** The next offset the group will read (-1: it has committed none; it starts where it was told). */
  readonly committed: number;
  /** The offset the next message of the partition gets. */
  readonly end: number;
  readonly lag: number;
}

/** The offsets a partition holds: from `start` (the oldest kept) to before `end` (the next one). */
export interface PartitionRange {
  readonly partition: number;
  readonly start: number;
  readonly end: number;
}

/** A live member of a consumer group and the partitions it holds. */
export interface GroupMember {
  readonly memberId: string;
  readonly clientId: string;
  readonly assignment: PartitionAssignment;
}

export interface MessagingAdmin {
  /** Creates the topics that do not exist yet; existing ones are left as they are. */
  createTopics(topics: readonly TopicSpec[]): Promise<void>;
  listTopics(): Promise<string[]>;
  /** Number of partitions of an existing topic. */
  partitionCount(topic: string): Promise<number>;
  deleteTopics(names: readonly string[]): Promise<void>;
  /** The consumer groups the bus knows. */
  listGroups(): Promise<string[]>;
  /** The group's lag on every partition of the topics it has committed offsets for (or reads now). */
  consumerLag(groupId: string): Promise<PartitionLag[]>;
  /** The group's live members and their partitions (empty when nobody is in it). */
  groupMembers(groupId: string): Promise<GroupMember[]>;
  /** Each partition of a topic: its oldest offset kept and the offset its next message gets. */
  partitionOffsets(topic: string): Promise<PartitionRange[]>;
  /**
   * Up to `max` messages of one partition from offset `from` on, in order, read outside any
   * consumer group: an operator's look at a topic (a dead-letter topic). Empty at the partition's
   * end; a compacted topic's gaps are skipped.
   */
  readMessages(topic: string, partition: number, from: number, max: number): Promise<IncomingMessage[]>;
  close(): Promise<void>;
}

export interface ProducerOptions {
  /** Broker-side de-duplication of retried sends, and per-partition order under retries. */
  readonly idempotent?: boolean;
}

export interface MessageProducer {
  /**
   * Resolves once every message is acknowledged by all in-sync replicas. However many messages it
   * is given, a send goes out in requests that fit the topic's size limit, in order. A message that
   * alone exceeds the limit rejects the whole send with a `MessageTooLargeError` naming its key,
   * before anything is sent; an answer that retrying cannot change rejects with a
   * `PublishRejectedError`. Anything else (a broker away, a leader moving) may succeed if retried.
   */
  send(topic: string, messages: readonly OutgoingMessage[]): Promise<void>;
  /**
   * Several topics' messages at once, as `send` would send each, in the order given: when every
   * topic's part fits its limit, all go in one request to the bus (one acknowledgement to wait for,
   * not one per topic). A message over its topic's limit rejects the whole call before anything
   * is sent, as `send` does. Should the request fail, any part of it may have been written.
   */
  sendAll(sends: readonly TopicMessages[]): Promise<void>;
  close(): Promise<void>;
}

/** One topic's part of a `sendAll`. */
export interface TopicMessages {
  readonly topic: string;
  readonly messages: readonly OutgoingMessage[];
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
  /**
   * Batches of up to this many partitions handled at once (default 1): a handler that gathers
   * concurrent batches into one write then pays for it once. A partition's batches still come one
   * at a time, in order. An adapter may handle fewer at once.
   */
  readonly concurrentPartitions?: number;
  /**
   * How long the bus may hold a fetch to hand more messages at once (default 0: as soon as there
   * is one). For a consumer off the lag path (status, summaries): fewer, larger batches, each with
   * its wake-up, decoding and offset commit, for at most this much delay. An adapter may ignore it.
   */
  readonly gatherMs?: number;
}

export interface MessageConsumer {
  /**
   * Starts delivery. Batches of one partition arrive in order, one at a time; a batch's offsets are
   * committed only after the handler resolves (at-least-once), or as far as it said with
   * `control.handledUpTo`. A handler that throws gets the same batch again, from after what it
   * said it handled. (A handler that must never stall its partition uses `createRetryingConsumer`.)
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

/**
 * Kafka's default limit for one record batch (`message.max.bytes`, the default of every topic's
 * `max.message.bytes`): 1 MiB plus the batch's 12-byte log overhead.
 */
export const DEFAULT_MAX_MESSAGE_BYTES = 1_048_588;

/** A send the bus refused for good: sending it again as it is cannot succeed. */
export class PublishRejectedError extends Error {
  readonly retriable = false;

  constructor(
    message: string,
    readonly topic: string,
    options?: { readonly cause?: unknown },
  ) {
    super(message, options);
    this.name = 'PublishRejectedError';
  }
}

/** Messages each larger than the topic's limit by itself; nothing of the send was sent. */
export class MessageTooLargeError extends PublishRejectedError {
  constructor(
    topic: string,
    /** The keys of the messages over the limit, in the order they were given. */
    readonly keys: readonly (string | null)[],
    readonly limitBytes: number,
  ) {
    super(
      `${keys.length} message(s) over the ${limitBytes}-byte limit of topic ${topic} (keys ${keys
        .slice(0, 5)
        .map((key) => JSON.stringify(key))
        .join(', ')}${keys.length > 5 ? ', ...' : ''})`,
      topic,
    );
    this.name = 'MessageTooLargeError';
  }
}

/** A message's size in a record batch: its key, value and headers, and the record's own framing. */
export function recordBytes(message: OutgoingMessage): number {
  return recordSize(message, (data) => Buffer.byteLength(data));
}

/**
 * At least `recordBytes`, told from lengths alone: a UTF-16 code unit takes at most three bytes in
 * UTF-8. Measuring a string's UTF-8 length reads all of it (~6 KB a `node.bundle` event), and the
 * encoder measures it again to write it.
 */
function recordBytesAtMost(message: OutgoingMessage): number {
  return recordSize(message, (data) => (typeof data === 'string' ? data.length * 3 : data.length));
}

function recordSize(message: OutgoingMessage, sizeOf: (data: string | Buffer) => number): number {
  let bytes = RECORD_OVERHEAD_BYTES + (message.value === null ? 0 : sizeOf(message.value));
  if (message.key !== null) bytes += sizeOf(message.key);
  if (message.headers !== undefined)
    for (const [name, value] of Object.entries(message.headers)) bytes += sizeOf(name) + sizeOf(value) + 8;
  return bytes;
}

/** Upper bound of a record's framing (length, attributes, timestamp and offset deltas, varints). */
const RECORD_OVERHEAD_BYTES = 32;
/** A record batch's header (offsets, epoch, CRC, producer id and sequence, count). */
const BATCH_OVERHEAD_BYTES = 128;

/**
 * Splits messages, in order, into runs that each fit in one record batch under `limitBytes`;
 * messages too large on their own are returned apart, with their positions.
 */
export function batchesUnderLimit(
  messages: readonly OutgoingMessage[],
  limitBytes: number,
): { readonly batches: OutgoingMessage[][]; readonly oversized: number[] } {
  const budget = limitBytes - BATCH_OVERHEAD_BYTES;
  // A send whose bound fits is one batch, none oversized: what measuring each message would find.
  let bound = 0;
  for (const message of messages) bound += recordBytesAtMost(message);
  if (bound <= budget) return { batches: messages.length > 0 ? [[...messages]] : [], oversized: [] };
  const batches: OutgoingMessage[][] = [];
  const oversized: number[] = [];
  let current: OutgoingMessage[] = [];
  let currentBytes = 0;
  messages.forEach((message, index) => {
    const bytes = recordBytes(message);
    if (bytes > budget) {
      oversized.push(index);
      return;
    }
    if (currentBytes + bytes > budget && current.length > 0) {
      batches.push(current);
      current = [];
      currentBytes = 0;
    }
    current.push(message);
    currentBytes += bytes;
  });
  if (current.length > 0) batches.push(current);
  return { batches, oversized };
}
