import type { ConnectionOptions } from 'node:tls';
import type { Admin, Consumer, IHeaders, Producer, SASLOptions } from 'kafkajs';
import { Kafka, logLevel } from 'kafkajs';
import { quietKafkajsRequestQueues } from './kafkajs-request-queue';
import type { SdkLogger } from '../consumer/logger';
import { stderrLogger } from '../consumer/logger';
import type {
  BatchControl,
  EventTransport,
  RawBatch,
  RawMessage,
  TransportSubscription,
} from './event-transport';
import type { DeadLetterDetails } from './event-transport';
import { deadLetterHeaders, deadLetterTopicOf } from './event-transport';

export interface KafkaConnection {
  readonly brokers: readonly string[];
  /** How the consumer shows in the brokers' logs and `kafka-consumer-groups` (default `policygen-sdk`). */
  readonly clientId?: string;
  readonly ssl?: boolean | ConnectionOptions;
  readonly sasl?: SASLOptions;
  /** How long the group waits for a silent member before giving its partitions to others (default 30 s). */
  readonly sessionTimeoutMs?: number;
  /** Create missing `<topic>.dlq` topics at start (default true; needs the right to create topics). */
  readonly createDeadLetterTopics?: boolean;
}

/** Where a partition of a subscribed topic ended when this member got it: caught up once read to there. */
interface CatchUpTarget {
  readonly topic: string;
  readonly partition: number;
  /** The offset of the last message that was there; -1: nothing to read. */
  readonly lastOffset: bigint;
  reached: boolean;
}

/** Events from Kafka, through kafkajs: a consumer group, offsets committed as far as handled. */
export class KafkaTransport implements EventTransport {
  readonly description: string;
  private readonly kafka: Kafka;
  private consumer: Consumer | null = null;
  private producer: Producer | null = null;
  private admin: Admin | null = null;
  private stopping = false;
  private targets = new Map<string, CatchUpTarget>();
  /** The last offset handled per `topic/partition`: batches may be handled before the targets are known. */
  private readonly handledOffsets = new Map<string, bigint>();
  private readonly caughtUpTopics = new Set<string>();
  private subscription: TransportSubscription | null = null;

  constructor(
    private readonly connection: KafkaConnection,
    logger: SdkLogger = stderrLogger,
  ) {
    if (connection.brokers.length === 0) throw new Error('kafka.brokers: at least one broker (host:port)');
    this.description = `kafka://${connection.brokers.join(',')}`;
    quietKafkajsRequestQueues();
    this.kafka = new Kafka({
      clientId: connection.clientId ?? 'policygen-sdk',
      brokers: [...connection.brokers],
      ...(connection.ssl !== undefined ? { ssl: connection.ssl } : {}),
      ...(connection.sasl !== undefined ? { sasl: connection.sasl } : {}),
      // kafkajs's own warnings and errors go where the consumer's go.
      logLevel: logLevel.WARN,
      logCreator:
        () =>
        ({ level, log }) => {
          const { message, ...fields } = log;
          const entry = { source: 'kafkajs', ...fields };
          if (level === logLevel.ERROR || level === logLevel.NOTHING) logger.error(entry, message);
          else logger.warn(entry, message);
        },
    });
  }

  async start(
    subscription: TransportSubscription,
    onBatch: (batch: RawBatch, control: BatchControl) => Promise<void>,
  ): Promise<void> {
    this.subscription = subscription;
    this.admin = this.kafka.admin();
    await this.admin.connect();
    if (this.connection.createDeadLetterTopics ?? true) {
      // Only the missing ones: asking for an existing topic makes the broker answer with an error.
      const existing = new Set(await this.admin.listTopics());
      const missing = subscription.topics.map(deadLetterTopicOf).filter((topic) => !existing.has(topic));
      if (missing.length > 0)
        await this.admin.createTopics({
          waitForLeaders: true,
          topics: missing.map((topic) => ({ topic, numPartitions: 1 })),
        });
    }
    this.producer = this.kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await this.producer.connect();
    const consumer = this.kafka.consumer({
      groupId: subscription.groupId,
      sessionTimeout: this.connection.sessionTimeoutMs ?? 30_000,
    });
    this.consumer = consumer;
    consumer.on(consumer.events.GROUP_JOIN, (event) => {
      void this.aimCatchUp(event.payload.memberAssignment).catch(() => undefined);
    });
    await consumer.connect();
    await consumer.subscribe({ topics: [...subscription.topics], fromBeginning: subscription.fromBeginning });
    await consumer.run({
      autoCommit: !subscription.ephemeral,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: subscription.concurrentPartitions,
      eachBatch: async ({
        batch,
        resolveOffset,
        heartbeat,
        commitOffsetsIfNecessary,
        isRunning,
        isStale,
      }) => {
        if (!isRunning() || isStale() || batch.messages.length === 0) return;
        const messages: RawMessage[] = batch.messages.map((message) => ({
          topic: batch.topic,
          partition: batch.partition,
          offset: message.offset,
          key: message.key === null ? null : message.key.toString('utf8'),
          value: message.value === null ? null : message.value.toString('utf8'),
          headers: headersOf(message.headers),
          timestamp: Number(message.timestamp),
        }));
        // A long batch (slow handlers, retries) must not look like a dead member to the group.
        const beat = setInterval(() => void heartbeat().catch(() => undefined), 3_000);
        try {
          await onBatch(
            { topic: batch.topic, partition: batch.partition, messages },
            {
              handledUpTo: (offset) => {
                resolveOffset(offset);
                this.reached(batch.topic, batch.partition, BigInt(offset));
              },
              isRunning: () => isRunning() && !isStale() && !this.stopping,
            },
          );
        } finally {
          clearInterval(beat);
        }
        await commitOffsetsIfNecessary();
      },
    });
  }

  async deadLetter(message: RawMessage, reason: string, details: DeadLetterDetails = {}): Promise<void> {
    if (!this.producer) throw new Error('the transport is not started');
    await this.producer.send({
      topic: deadLetterTopicOf(message.topic),
      acks: -1,
      messages: [
        {
          key: message.key,
          value: message.value,
          headers: deadLetterHeaders(message, reason, {
            ...(this.subscription ? { groupId: this.subscription.groupId } : {}),
            ...details,
          }),
        },
      ],
    });
  }

  async stop(): Promise<void> {
    this.stopping = true;
    // kafkajs lets the batches in flight end, then commits the offsets they resolved.
    await this.consumer?.disconnect();
    await this.producer?.disconnect();
    if (this.subscription?.ephemeral)
      await this.admin?.deleteGroups([this.subscription.groupId]).catch(() => undefined);
    await this.admin?.disconnect();
  }

  /** The end of each partition this member was given, and where the group stands on it. */
  private async aimCatchUp(assignment: Record<string, number[]>): Promise<void> {
    const admin = this.admin;
    const subscription = this.subscription;
    if (!admin || !subscription) return;
    const targets = new Map<string, CatchUpTarget>();
    for (const [topic, partitions] of Object.entries(assignment)) {
      if (this.caughtUpTopics.has(topic)) continue;
      const ends = await admin.fetchTopicOffsets(topic);
      const committed = await admin.fetchOffsets({ groupId: subscription.groupId, topics: [topic] });
      const committedOf = new Map(
        committed
          .flatMap((entry) => entry.partitions)
          .map((entry) => [entry.partition, BigInt(entry.offset)]),
      );
      for (const partition of partitions) {
        const end = ends.find((entry) => entry.partition === partition);
        const high = BigInt(end?.high ?? end?.offset ?? '0');
        const low = BigInt(end?.low ?? '0');
        const next = committedOf.get(partition) ?? -1n;
        const nothingToRead = high === low || next >= high || (!subscription.fromBeginning && next < 0n);
        // Batches may have been handled while the offsets were asked for.
        const handled = this.handledOffsets.get(`${topic}/${partition}`) ?? -1n;
        targets.set(`${topic}/${partition}`, {
          topic,
          partition,
          lastOffset: high - 1n,
          reached: nothingToRead || handled >= high - 1n,
        });
      }
    }
    this.targets = targets;
    for (const topic of Object.keys(assignment)) this.checkCaughtUp(topic);
    for (const topic of subscription.topics)
      if (!(topic in assignment) && !this.caughtUpTopics.has(topic)) {
        // Another member holds all of it.
        this.caughtUpTopics.add(topic);
        subscription.onCaughtUp(topic);
      }
  }

  private reached(topic: string, partition: number, offset: bigint): void {
    this.handledOffsets.set(`${topic}/${partition}`, offset);
    const target = this.targets.get(`${topic}/${partition}`);
    if (!target || target.reached || offset < target.lastOffset) return;
    target.reached = true;
    this.checkCaughtUp(topic);
  }

  private checkCaughtUp(topic: string): void {
    if (this.caughtUpTopics.has(topic)) return;
    const targets = [...this.targets.values()].filter((target) => target.topic === topic);
    if (targets.length === 0 || targets.some((target) => !target.reached)) return;
    this.caughtUpTopics.add(topic);
    this.subscription?.onCaughtUp(topic);
  }
}

function headersOf(headers: IHeaders | undefined): Record<string, string> {
  const decoded: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (value === undefined) continue;
    const first = Array.isArray(value) ? value[0] : value;
    if (first !== undefined) decoded[name] = first.toString();
  }
  return decoded;
}
