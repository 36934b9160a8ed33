import {
  AssignerProtocol,
  ConfigResourceTypes,
  Kafka,
  Partitioners,
  logLevel as KafkaLogLevel,
} from 'kafkajs';
import { randomUUID } from 'node:crypto';
import type { Admin, Consumer, KafkaConfig, KafkaMessage, LogEntry, Producer } from 'kafkajs';
import { quietKafkajsRequestQueues } from '@policygen/sdk';
import type {
  BatchHandler,
  ConsumerOptions,
  IncomingMessage,
  MessageConsumer,
  MessageHeaders,
  MessageProducer,
  Messaging,
  GroupMember,
  MessagingAdmin,
  OutgoingMessage,
  PartitionAssignment,
  PartitionLag,
  PartitionRange,
  ProducerOptions,
  TopicMessages,
  TopicSpec,
} from '../messaging';
import {
  batchesUnderLimit,
  DEFAULT_MAX_MESSAGE_BYTES,
  MessageTooLargeError,
  PublishRejectedError,
} from '../messaging';
import { CoalescedCommits } from './coalesced-commits';

export interface MessagingLogEntry {
  readonly level: 'error' | 'warn' | 'info' | 'debug';
  readonly namespace: string;
  readonly message: string;
  readonly extra: Readonly<Record<string, unknown>>;
}

export interface KafkaMessagingOptions {
  readonly brokers: readonly string[];
  readonly clientId?: string;
  /** Upper bound for establishing one broker connection. */
  readonly connectionTimeoutMs?: number;
  readonly requestTimeoutMs?: number;
  /** Retries of a failed request before the operation rejects; bounds how long a dead broker is waited for. */
  readonly retries?: number;
  /** Receives the client's warnings and errors; by default they go to stderr as JSON lines. */
  readonly log?: (entry: MessagingLogEntry) => void;
}

const LEVELS: Readonly<Record<number, MessagingLogEntry['level']>> = {
  [KafkaLogLevel.ERROR]: 'error',
  [KafkaLogLevel.WARN]: 'warn',
  [KafkaLogLevel.INFO]: 'info',
  [KafkaLogLevel.DEBUG]: 'debug',
};

function writeToStderr(entry: MessagingLogEntry): void {
  process.stderr.write(`${JSON.stringify({ source: 'kafka', ...entry })}\n`);
}

export function createKafkaMessaging(options: KafkaMessagingOptions): Messaging {
  const log = options.log ?? writeToStderr;
  if (!quietKafkajsRequestQueues())
    log({
      level: 'warn',
      namespace: 'RequestQueue',
      message:
        "kafkajs's request queue is not the one of 2.2.4: its 1 ms idle timer (tulios/kafkajs#1556) is left as it is",
      extra: {},
    });
  const config: KafkaConfig = {
    clientId: options.clientId ?? 'policygen',
    brokers: [...options.brokers],
    connectionTimeout: options.connectionTimeoutMs ?? 3_000,
    requestTimeout: options.requestTimeoutMs ?? 30_000,
    retry: { retries: options.retries ?? 5 },
    logLevel: KafkaLogLevel.WARN,
    logCreator:
      () =>
      ({ namespace, level, log: { message, ...extra } }: LogEntry) =>
        log({ level: LEVELS[level] ?? 'info', namespace, message, extra }),
  };
  const kafka = new Kafka(config);

  return {
    async createAdmin() {
      const admin = kafka.admin();
      await admin.connect();
      return new KafkaAdmin(admin, kafka);
    },
    async createProducer(producerOptions: ProducerOptions = {}) {
      const idempotent = producerOptions.idempotent ?? false;
      const producer = kafka.producer({
        createPartitioner: Partitioners.DefaultPartitioner,
        idempotent,
        // An idempotent producer keeps order under retries only with one request in flight (kafkajs).
        ...(idempotent ? { maxInFlightRequests: 1 } : {}),
      });
      await producer.connect();
      return new KafkaProducer(producer, new TopicLimits(kafka, log));
    },
    async createConsumer(consumerOptions: ConsumerOptions) {
      const gatherMs = consumerOptions.gatherMs ?? 0;
      const consumer = kafka.consumer({
        groupId: consumerOptions.groupId,
        // The broker answers a fetch once it has this many bytes or the wait is over.
        ...(gatherMs > 0 ? { minBytes: GATHER_MIN_BYTES, maxWaitTimeInMs: gatherMs } : {}),
        ...(consumerOptions.sessionTimeoutMs === undefined
          ? {}
          : {
              sessionTimeout: consumerOptions.sessionTimeoutMs,
              heartbeatInterval: Math.max(100, Math.floor(consumerOptions.sessionTimeoutMs / 10)),
            }),
      });
      const wrapped = new KafkaConsumer(consumer, consumerOptions.concurrentPartitions ?? 1);
      await consumer.connect();
      await consumer.subscribe({
        topics: [...consumerOptions.topics],
        fromBeginning: consumerOptions.fromBeginning ?? false,
      });
      return wrapped;
    },
  };
}

/** What a gathering fetch waits for at most before its time is up: more than its batches hold. */
const GATHER_MIN_BYTES = 1024 * 1024;

/** How long a read outside any group waits for the broker to hand over a partition's messages. */
const READ_TIMEOUT_MS = 30_000;

class KafkaAdmin implements MessagingAdmin {
  constructor(
    private readonly admin: Admin,
    private readonly kafka: Kafka,
  ) {}

  async createTopics(topics: readonly TopicSpec[]): Promise<void> {
    // Services starting together create the same topics: the loser of that race can see a topic
    // that exists but whose partitions are not yet known to the broker it asks, so it asks again.
    for (let attempt = 1; ; attempt++) {
      try {
        const existing = new Set(await this.admin.listTopics());
        const missing = topics.filter((topic) => !existing.has(topic.name));
        if (missing.length === 0) return;
        await this.admin.createTopics({
          waitForLeaders: true,
          topics: missing.map((topic) => ({
            topic: topic.name,
            numPartitions: topic.partitions,
            replicationFactor: topic.replicationFactor ?? 1,
            configEntries: Object.entries(topic.config ?? {}).map(([name, value]) => ({ name, value })),
          })),
        });
        return;
      } catch (error) {
        if (attempt >= 10) throw error;
        await new Promise((resolve) => setTimeout(resolve, 300 * attempt));
      }
    }
  }

  listTopics(): Promise<string[]> {
    return this.admin.listTopics();
  }

  async partitionCount(topic: string): Promise<number> {
    const metadata = await this.admin.fetchTopicMetadata({ topics: [topic] });
    const found = metadata.topics.find((entry) => entry.name === topic);
    if (!found) throw new Error(`topic ${topic} does not exist`);
    return found.partitions.length;
  }

  async deleteTopics(names: readonly string[]): Promise<void> {
    if (names.length > 0) await this.admin.deleteTopics({ topics: [...names] });
  }

  async listGroups(): Promise<string[]> {
    const { groups } = await this.admin.listGroups();
    return groups.map((group) => group.groupId).sort();
  }

  async consumerLag(groupId: string): Promise<PartitionLag[]> {
    const committed = await this.admin.fetchOffsets({ groupId });
    const lags: PartitionLag[] = [];
    for (const { topic, partitions } of committed.sort((a, b) => a.topic.localeCompare(b.topic))) {
      const ends = new Map(
        (await this.admin.fetchTopicOffsets(topic)).map((offsets) => [offsets.partition, offsets]),
      );
      for (const { partition, offset } of partitions.sort((a, b) => a.partition - b.partition)) {
        const end = Number(ends.get(partition)?.high ?? 0);
        const low = Number(ends.get(partition)?.low ?? 0);
        const next = Number(offset);
        lags.push({
          topic,
          partition,
          committed: next,
          end,
          lag: Math.max(0, end - (next < 0 ? low : next)),
        });
      }
    }
    return lags;
  }

  async groupMembers(groupId: string): Promise<GroupMember[]> {
    const { groups } = await this.admin.describeGroups([groupId]);
    return (groups[0]?.members ?? []).map((member) => {
      const decoded =
        member.memberAssignment.length > 0
          ? AssignerProtocol.MemberAssignment.decode(member.memberAssignment)
          : null;
      return {
        memberId: member.memberId,
        clientId: member.clientId,
        assignment: decoded?.assignment ?? {},
      };
    });
  }

  async partitionOffsets(topic: string): Promise<PartitionRange[]> {
    return (await this.admin.fetchTopicOffsets(topic))
      .map(({ partition, low, high }) => ({ partition, start: Number(low), end: Number(high) }))
      .sort((a, b) => a.partition - b.partition);
  }

  /**
   * kafkajs reads only as a group member: a group of its own, that starts nowhere, is sought to
   * `from`, and is deleted afterwards; nothing is committed.
   */
  async readMessages(
    topic: string,
    partition: number,
    from: number,
    max: number,
  ): Promise<IncomingMessage[]> {
    const range = (await this.partitionOffsets(topic)).find((each) => each.partition === partition);
    if (!range) throw new Error(`topic ${topic} has no partition ${partition}`);
    const start = Math.max(from, range.start);
    if (start >= range.end || max <= 0) return [];
    const groupId = `policygen-read.${randomUUID()}`;
    const consumer = this.kafka.consumer({ groupId, allowAutoTopicCreation: false });
    const read: IncomingMessage[] = [];
    try {
      await consumer.connect();
      await consumer.subscribe({ topics: [topic], fromBeginning: false });
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(
              new Error(`no messages of ${topic}/${partition} from ${start} within ${READ_TIMEOUT_MS} ms`),
            ),
          READ_TIMEOUT_MS,
        );
        const done = () => {
          clearTimeout(timer);
          resolve();
        };
        consumer
          .run({
            autoCommit: false,
            eachBatchAutoResolve: false,
            eachBatch: async ({ batch, isStale }) => {
              if (batch.partition !== partition || isStale()) return;
              for (const message of batch.messages) {
                const offset = Number(message.offset);
                if (offset < start || read.length >= max) continue;
                read.push(incomingOf(batch.topic, batch.partition, message));
              }
              const last = Number(batch.lastOffset());
              if (read.length >= max || last >= range.end - 1) done();
            },
          })
          .then(() => consumer.seek({ topic, partition, offset: String(start) }))
          .catch((error: unknown) => {
            clearTimeout(timer);
            reject(error instanceof Error ? error : new Error(String(error)));
          });
      });
    } finally {
      await consumer.disconnect().catch(() => undefined);
      await this.admin.deleteGroups([groupId]).catch(() => undefined);
    }
    return read;
  }

  close(): Promise<void> {
    return this.admin.disconnect();
  }
}

/**
 * Each topic's `max.message.bytes` as the broker has it, asked once per topic: a send is cut to fit
 * it. A topic the broker cannot describe (not created yet) gets Kafka's default, asked again later.
 */
class TopicLimits {
  private admin: Promise<Admin> | null = null;
  private readonly known = new Map<string, number>();

  constructor(
    private readonly kafka: Kafka,
    private readonly log: (entry: MessagingLogEntry) => void,
  ) {}

  async of(topic: string): Promise<number> {
    const known = this.known.get(topic);
    if (known !== undefined) return known;
    try {
      this.admin ??= this.connect();
      const { resources } = await (
        await this.admin
      ).describeConfigs({
        includeSynonyms: false,
        resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['max.message.bytes'] }],
      });
      const value = resources[0]?.configEntries.find(
        (entry) => entry.configName === 'max.message.bytes',
      )?.configValue;
      const limit = Number(value);
      if (!Number.isInteger(limit) || limit <= 0) return DEFAULT_MAX_MESSAGE_BYTES;
      this.known.set(topic, limit);
      return limit;
    } catch (error) {
      this.log({
        level: 'warn',
        namespace: 'TopicLimits',
        message: `could not read max.message.bytes of ${topic}; assuming Kafka's default`,
        extra: { error: (error as Error).message },
      });
      return DEFAULT_MAX_MESSAGE_BYTES;
    }
  }

  async close(): Promise<void> {
    const admin = this.admin;
    this.admin = null;
    if (admin) await (await admin.catch(() => null))?.disconnect();
  }

  private async connect(): Promise<Admin> {
    const admin = this.kafka.admin();
    try {
      await admin.connect();
      return admin;
    } catch (error) {
      this.admin = null;
      throw error;
    }
  }
}

class KafkaProducer implements MessageProducer {
  constructor(
    private readonly producer: Producer,
    private readonly limits: TopicLimits,
  ) {}

  send(topic: string, messages: readonly OutgoingMessage[]): Promise<void> {
    return this.sendAll([{ topic, messages }]);
  }

  async sendAll(sends: readonly TopicMessages[]): Promise<void> {
    const planned: { topic: string; batches: (readonly OutgoingMessage[])[] }[] = [];
    for (const { topic, messages } of sends) {
      if (messages.length === 0) continue;
      const limit = await this.limits.of(topic);
      const { batches, oversized } = batchesUnderLimit(messages, limit);
      if (oversized.length > 0)
        throw new MessageTooLargeError(
          topic,
          oversized.map((index) => messages[index]?.key ?? null),
          limit,
        );
      planned.push({ topic, batches });
    }
    if (planned.length === 0) return;
    if (planned.every(({ batches }) => batches.length === 1)) {
      await this.request(planned.map(({ topic, batches }) => ({ topic, messages: batches[0] ?? [] })));
      return;
    }
    for (const { topic, batches } of planned)
      for (const batch of batches) await this.request([{ topic, messages: batch }]);
  }

  /** One produce request: each topic's messages in one batch per partition. */
  private async request(parts: readonly TopicMessages[]): Promise<void> {
    try {
      await this.producer.sendBatch({
        acks: -1,
        topicMessages: parts.map(({ topic, messages }) => ({
          topic,
          messages: messages.map((message) => ({
            key: message.key,
            value: message.value,
            ...(message.headers ? { headers: { ...message.headers } } : {}),
          })),
        })),
      });
    } catch (error) {
      throw rejectionOf(error, parts.map(({ topic }) => topic).join(', ')) ?? error;
    }
  }

  async close(): Promise<void> {
    await this.limits.close();
    await this.producer.disconnect();
  }
}

/**
 * kafkajs's way of saying an answer will not change: a non-retriable error, other than retries
 * running out (a broker away, which a later attempt may find back).
 */
function rejectionOf(error: unknown, topic: string): PublishRejectedError | null {
  const failure = error as { name?: string; retriable?: boolean };
  if (failure.name === 'KafkaJSNumberOfRetriesExceeded') return null;
  if (failure.name !== 'KafkaJSNonRetriableError' && failure.retriable !== false) return null;
  return new PublishRejectedError(`${topic}: ${(error as Error).message}`, topic, { cause: error });
}

class KafkaConsumer implements MessageConsumer {
  private readonly assignmentListeners: Array<(assignment: PartitionAssignment) => void> = [];
  private readonly commits = new CoalescedCommits();

  constructor(
    private readonly consumer: Consumer,
    private readonly concurrentPartitions: number,
  ) {
    consumer.on(consumer.events.GROUP_JOIN, (event) => {
      const assignment: PartitionAssignment = event.payload.memberAssignment;
      for (const listener of this.assignmentListeners) listener(assignment);
    });
  }

  onAssignment(listener: (assignment: PartitionAssignment) => void): void {
    this.assignmentListeners.push(listener);
  }

  start(handler: BatchHandler): Promise<void> {
    return this.consumer.run({
      partitionsConsumedConcurrently: this.concurrentPartitions,
      // Committed here, once a batch is handled, in one request for the batches handled together
      // (kafkajs's own commit is one request after each partition's batch).
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: async ({
        batch,
        resolveOffset,
        heartbeat,
        commitOffsetsIfNecessary,
        uncommittedOffsets,
        isRunning,
        isStale,
      }) => {
        if (!isRunning() || isStale() || batch.messages.length === 0) return;
        const messages: IncomingMessage[] = batch.messages.map((message) =>
          incomingOf(batch.topic, batch.partition, message),
        );
        await handler(
          { topic: batch.topic, partition: batch.partition, messages },
          {
            handledUpTo: (offset) => resolveOffset(offset),
            heartbeat: () => heartbeat(),
            isRunning: () => isRunning() && !isStale(),
          },
        );
        resolveOffset(batch.messages[batch.messages.length - 1]?.offset ?? batch.lastOffset());
        await this.commits.commit(async () => {
          const offsets = uncommittedOffsets();
          if (offsets.topics.length > 0) await commitOffsetsIfNecessary(offsets);
        });
        await heartbeat();
      },
    });
  }

  async close(): Promise<void> {
    await this.consumer.disconnect();
  }
}

function incomingOf(topic: string, partition: number, message: KafkaMessage): IncomingMessage {
  return {
    topic,
    partition,
    offset: message.offset,
    key: message.key ? message.key.toString('utf8') : null,
    value: message.value ?? Buffer.alloc(0),
    ...(message.value === null ? { tombstone: true as const } : {}),
    headers: decodeHeaders(message.headers),
    timestamp: Number(message.timestamp),
  };
}

function decodeHeaders(headers: Record<string, unknown> | undefined): MessageHeaders {
  const decoded: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (value === undefined) continue;
    const first: unknown = Array.isArray(value) ? value[0] : value;
    decoded[name] = Buffer.isBuffer(first) ? first.toString('utf8') : String(first);
  }
  return decoded;
}
