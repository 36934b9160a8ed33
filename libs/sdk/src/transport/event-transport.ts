/**
 * What the consumer needs of a source of events: Kafka, or the event stream of `policygen start`.
 * Neither kafkajs nor the stream's wire format shows through it.
 */

/** A message as it arrived: its value not yet read as an event. */
export interface RawMessage {
  readonly topic: string;
  readonly partition: number;
  /** A 64-bit offset, as a decimal string. */
  readonly offset: string;
  readonly key: string | null;
  /** The message's UTF-8 text; `null` for a tombstone (a key's deletion on a compacted topic). */
  readonly value: string | null;
  readonly headers: Readonly<Record<string, string>>;
  /** Milliseconds since the epoch. */
  readonly timestamp: number;
}

/** Consecutive messages of one partition. */
export interface RawBatch {
  readonly topic: string;
  readonly partition: number;
  readonly messages: readonly RawMessage[];
}

export interface BatchControl {
  /** The batch's messages up to this offset are handled: the transport may commit past it. */
  handledUpTo(offset: string): void;
  /** False once the consumer is stopping: start nothing new, finish and report what runs. */
  isRunning(): boolean;
}

export interface TransportSubscription {
  readonly groupId: string;
  /** Topic names as on the bus (with the deployment's namespace). */
  readonly topics: readonly string[];
  /** Where a group with no committed position starts: the oldest message, or new ones only. */
  readonly fromBeginning: boolean;
  /** Batches of this many partitions at most are handled at once. */
  readonly concurrentPartitions: number;
  /** A one-off read (a snapshot): nothing is committed, and the group is deleted at stop. */
  readonly ephemeral?: boolean;
  /** Called once per topic when everything that was in it at start has been handled. */
  readonly onCaughtUp: (topic: string) => void;
}

export interface EventTransport {
  /** What the transport reads from, for logs and errors (`kafka://host:9092`, `http://…/events`). */
  readonly description: string;
  /**
   * Starts delivery and resolves once it runs. Batches of one partition come one at a time, in
   * order; a batch whose handler rejects is delivered again. Positions are committed as far as
   * `handledUpTo` says.
   */
  start(
    subscription: TransportSubscription,
    onBatch: (batch: RawBatch, control: BatchControl) => Promise<void>,
  ): Promise<void>;
  /** Puts a message nobody can handle on its topic's dead-letter topic (`<topic>.dlq`). */
  deadLetter(message: RawMessage, reason: string, details?: DeadLetterDetails): Promise<void>;
  /** Lets the batches in flight finish, commits what was handled, and disconnects. */
  stop(): Promise<void>;
}

/**
 * The headers a dead letter carries besides the original message's own: one format for every
 * dead letter of Policygen, whoever wrote it (a service's transport, the SDK's consumer).
 */
export const DEAD_LETTER_HEADERS = {
  /** Why it could not be handled: the handler's last error, or what is wrong with the message. */
  error: 'policygen-error',
  /** Where it was read: `<topic>/<partition>/<offset>`. */
  origin: 'policygen-origin',
  /** How many times a handler was given it and failed (1 for a message that could not be read). */
  attempts: 'policygen-attempts',
  /** When it was given up, ISO 8601. */
  failedAt: 'policygen-failed-at',
  /** The consumer group that gave it up, when known. */
  group: 'policygen-consumer-group',
  /** On a replayed message: the dead letter it was replayed from, `<dlq topic>/<partition>/<offset>`. */
  replayedFrom: 'policygen-replayed-from',
} as const;

/** What is known of a failure besides its reason. */
export interface DeadLetterDetails {
  readonly attempts?: number;
  readonly groupId?: string;
  readonly failedAt?: Date;
}

export function deadLetterHeaders(
  message: Pick<RawMessage, 'topic' | 'partition' | 'offset' | 'headers'>,
  reason: string,
  details: DeadLetterDetails = {},
): Record<string, string> {
  return {
    ...message.headers,
    [DEAD_LETTER_HEADERS.error]: reason,
    [DEAD_LETTER_HEADERS.origin]: `${message.topic}/${message.partition}/${message.offset}`,
    [DEAD_LETTER_HEADERS.attempts]: String(details.attempts ?? 1),
    [DEAD_LETTER_HEADERS.failedAt]: (details.failedAt ?? new Date()).toISOString(),
    ...(details.groupId === undefined ? {} : { [DEAD_LETTER_HEADERS.group]: details.groupId }),
  };
}

export function deadLetterTopicOf(topic: string): string {
  return `${topic}.dlq`;
}
