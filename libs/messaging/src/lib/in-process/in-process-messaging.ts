import type { MessagingLogEntry } from '../kafka/kafka-messaging';
import type {
  BatchControl,
  BatchHandler,
  ConsumerOptions,
  IncomingMessage,
  MessageBatch,
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
  TopicMessages,
  TopicSpec,
} from '../messaging';
import { batchesUnderLimit, DEFAULT_MAX_MESSAGE_BYTES, MessageTooLargeError } from '../messaging';
import { partitionForKey } from '../partitioning/partition-for-key';

/**
 * The event bus of the embedded default: the messaging port in one process, with Kafka's semantics
 * as the services see them through the port. Topics are created by an admin before anything is
 * produced to them (a broker with topic auto-creation off); a keyed message lands in the partition
 * Kafka's default partitioner picks (`partitionForKey`); consumer groups share the partitions of
 * their topics, commit offsets per partition once a handler resolves, and rebalance when a member
 * joins or leaves, as Kafka's eager protocol does: the batches in flight finish first, then every
 * member is told its partitions. Nothing survives the process.
 */

export interface InProcessMessagingOptions {
  /** Messages kept per partition; the oldest beyond are dropped, as a retention limit would (default 100,000). */
  readonly retainPerPartition?: number;
  /** Bytes (keys, values, headers) a batch holds at most, but always one message (default 1 MiB, as kafkajs). */
  readonly maxBatchBytes?: number;
  /** How long a batch whose handler threw waits before it is given again (default 100 ms). */
  readonly retryBackoffMs?: number;
  /** Receives the bus's warnings and errors (a failed handler); by default they go to stderr as JSON lines. */
  readonly log?: (entry: MessagingLogEntry) => void;
}

const DEFAULT_RETAIN_PER_PARTITION = 100_000;
const DEFAULT_MAX_BATCH_BYTES = 1024 * 1024;
const DEFAULT_RETRY_BACKOFF_MS = 100;
/** Kafka's rule for topic names. */
const TOPIC_NAME = /^[A-Za-z0-9._-]{1,249}$/;

function writeToStderr(entry: MessagingLogEntry): void {
  process.stderr.write(`${JSON.stringify({ source: 'in-process-messaging', ...entry })}\n`);
}

/** A message as the log holds it, for readers outside a consumer group (the event stream). */
export interface LoggedMessage {
  readonly partition: number;
  readonly offset: number;
  readonly key: string | null;
  /** `null` for a tombstone. */
  readonly value: Buffer | null;
  readonly headers: MessageHeaders;
  readonly timestamp: number;
}

/**
 * The bus's logs, read from any position without a consumer group: what `policygen start`'s event
 * stream serves to processes outside.
 */
export interface MessageLog {
  /** The topic's partitions' kept ranges (`start` the oldest offset kept, `end` the next one), or null if there is no such topic. */
  ranges(topic: string): { readonly start: number; readonly end: number }[] | null;
  /** Up to `max` messages of a partition from `from` on (a compacted topic has gaps in its offsets). */
  read(topic: string, partition: number, from: number, max: number): LoggedMessage[];
  /** Called with the topic's name after each send to it; returns the unsubscribe. */
  onAppend(listener: (topic: string) => void): () => void;
}

export interface InProcessMessaging extends Messaging {
  readonly log: MessageLog;
}

/** A new, empty bus: every admin, producer and consumer created from it shares its topics and groups. */
export function createInProcessMessaging(options: InProcessMessagingOptions = {}): InProcessMessaging {
  const retain = options.retainPerPartition ?? DEFAULT_RETAIN_PER_PARTITION;
  if (!Number.isInteger(retain) || retain < 1)
    throw new Error(`retainPerPartition must be a positive integer, not ${retain}`);
  const bus = new Bus({
    retain,
    maxBatchBytes: options.maxBatchBytes ?? DEFAULT_MAX_BATCH_BYTES,
    retryBackoffMs: options.retryBackoffMs ?? DEFAULT_RETRY_BACKOFF_MS,
    log: options.log ?? writeToStderr,
  });
  return {
    log: {
      ranges: (topic) =>
        bus.topics.get(topic)?.partitions.map((log) => ({ start: log.start, end: log.end })) ?? null,
      read: (topic, partition, from, max) => {
        const log = bus.topics.get(topic)?.partitions[partition];
        if (!log) return [];
        const read: LoggedMessage[] = [];
        for (let offset = Math.max(from, log.start); offset < log.end && read.length < max; offset++) {
          const message = log.get(offset);
          if (message)
            read.push({
              partition,
              offset,
              key: message.key,
              value: message.tombstone ? null : message.value,
              headers: message.headers,
              timestamp: message.timestamp,
            });
        }
        return read;
      },
      onAppend: (listener) => {
        bus.appendListeners.add(listener);
        return () => bus.appendListeners.delete(listener);
      },
    },
    async createAdmin() {
      return new InProcessAdmin(bus);
    },
    async createProducer() {
      // Idempotence is moot: a send is appended once, whole, in order.
      return new InProcessProducer(bus);
    },
    async createConsumer(consumerOptions: ConsumerOptions) {
      if (!consumerOptions.groupId) throw new Error('a consumer needs a groupId');
      if (consumerOptions.topics.length === 0) throw new Error('a consumer needs at least one topic');
      for (const topic of consumerOptions.topics) bus.topic(topic);
      return new InProcessConsumer(bus, consumerOptions);
    },
  };
}

interface BusSettings {
  readonly retain: number;
  readonly maxBatchBytes: number;
  readonly retryBackoffMs: number;
  readonly log: (entry: MessagingLogEntry) => void;
}

interface StoredMessage {
  readonly offset: number;
  readonly key: string | null;
  readonly value: Buffer;
  readonly tombstone: boolean;
  readonly headers: MessageHeaders;
  readonly timestamp: number;
  readonly bytes: number;
}

/** One partition's log: offsets from 0, the oldest dropped beyond the retention limit. */
class PartitionLog {
  private entries: (StoredMessage | undefined)[] = [];
  /** Index in `entries` of the oldest message kept. */
  private head = 0;
  /** Offset of `entries[0]`. */
  private base = 0;
  /** A compacted topic's latest offset per key: an older message of the key leaves a gap. */
  private readonly latestOfKey: Map<string, number> | null;

  constructor(
    private readonly retain: number,
    compacted = false,
  ) {
    this.latestOfKey = compacted ? new Map() : null;
  }

  /** The oldest offset kept. */
  get start(): number {
    return this.base + this.head;
  }

  /** The offset the next message gets. */
  get end(): number {
    return this.base + this.entries.length;
  }

  append(message: Omit<StoredMessage, 'offset'>): void {
    if (this.latestOfKey && message.key !== null) {
      // Compaction at once, which Kafka does later: a reader sees the latest message of each key
      // (a tombstone too, which this log keeps; Kafka drops it after delete.retention.ms).
      const previous = this.latestOfKey.get(message.key);
      if (previous !== undefined && previous >= this.start) this.entries[previous - this.base] = undefined;
      this.latestOfKey.set(message.key, this.end);
    }
    this.entries.push({ ...message, offset: this.end });
    while (this.entries.length - this.head > this.retain) this.entries[this.head++] = undefined;
    // Drops the emptied slots now and then: amortised constant time per message.
    if (this.head >= 1024 && this.head * 2 >= this.entries.length) {
      this.entries = this.entries.slice(this.head);
      this.base += this.head;
      this.head = 0;
    }
  }

  /** The message at an offset, or undefined where compaction left a gap (or retention dropped it). */
  get(offset: number): StoredMessage | undefined {
    return offset < this.start ? undefined : this.entries[offset - this.base];
  }
}

class Topic {
  readonly partitions: PartitionLog[];
  private nextUnkeyed = 0;

  constructor(
    readonly name: string,
    partitions: number,
    retain: number,
    /** A record batch's size limit, as the topic's `max.message.bytes`. */
    readonly maxMessageBytes: number,
    compacted = false,
  ) {
    this.partitions = Array.from({ length: partitions }, () => new PartitionLog(retain, compacted));
  }

  /** Kafka's default partitioner: the key's murmur2 hash, or round-robin for messages without a key. */
  partitionOf(key: string | null): number {
    if (key !== null) return partitionForKey(key, this.partitions.length);
    const partition = this.nextUnkeyed % this.partitions.length;
    this.nextUnkeyed = (this.nextUnkeyed + 1) % this.partitions.length;
    return partition;
  }
}

class Bus {
  readonly topics = new Map<string, Topic>();
  readonly groups = new Map<string, Group>();
  readonly appendListeners = new Set<(topic: string) => void>();

  constructor(readonly settings: BusSettings) {}

  topic(name: string): Topic {
    const topic = this.topics.get(name);
    if (!topic)
      throw new Error(`topic ${name} does not exist (topics are created with the admin, never on first use)`);
    return topic;
  }

  group(groupId: string): Group {
    let group = this.groups.get(groupId);
    if (!group) this.groups.set(groupId, (group = new Group(this, groupId)));
    return group;
  }

  /** Topics appeared or vanished: no group keeps offsets of them, and the groups reading them rebalance. */
  topicsChanged(names: readonly string[]): void {
    for (const group of this.groups.values()) {
      group.forget(names);
      if (group.readsAny(names)) void group.requestRebalance();
    }
  }

  /** New messages in a topic: the members reading it look for work. */
  produced(topic: string): void {
    for (const group of this.groups.values()) group.wakeReadersOf(topic);
    for (const listener of this.appendListeners) listener(topic);
  }
}

/** A partition of a topic, as a consumer group sees it. */
interface TopicPartition {
  readonly topic: Topic;
  readonly partition: number;
  /** `topic:partition`, the key of the group's committed offsets. */
  readonly id: string;
}

class Group {
  private readonly members: InProcessConsumer[] = [];
  /** Next offset to read, per partition: committed by the members, or where a member started. */
  private readonly committed = new Map<string, number>();
  private dirty = false;
  private rebalance: Promise<void> | null = null;

  constructor(
    private readonly bus: Bus,
    readonly id: string,
  ) {}

  /** True while the members are being reassigned: no new batch starts. */
  get rebalancing(): boolean {
    return this.rebalance !== null;
  }

  join(member: InProcessConsumer): Promise<void> {
    this.members.push(member);
    return this.requestRebalance();
  }

  leave(member: InProcessConsumer): void {
    const index = this.members.indexOf(member);
    if (index < 0) return;
    this.members.splice(index, 1);
    void this.requestRebalance();
  }

  /** Each partition the group has an offset for, or whose topic a member reads, and how far behind it is. */
  lag(): PartitionLag[] {
    const names = new Set(this.members.flatMap((member) => member.topics));
    for (const id of this.committed.keys()) names.add(id.slice(0, id.lastIndexOf(':')));
    const lags: PartitionLag[] = [];
    for (const name of [...names].sort()) {
      const topic = this.bus.topics.get(name);
      if (!topic) continue;
      topic.partitions.forEach((log, partition) => {
        const committed = this.committed.get(`${name}:${partition}`) ?? -1;
        const from = committed < 0 ? log.start : Math.max(committed, log.start);
        lags.push({ topic: name, partition, committed, end: log.end, lag: Math.max(0, log.end - from) });
      });
    }
    return lags;
  }

  view(): GroupMember[] {
    return this.members.map((member, index) => ({
      memberId: `${this.id}-${index + 1}`,
      clientId: this.id,
      assignment: member.assignment(),
    }));
  }

  readsAny(topics: readonly string[]): boolean {
    return this.members.some((member) => member.topics.some((topic) => topics.includes(topic)));
  }

  /** Forgets the offsets of topics that were deleted or created anew. */
  forget(topics: readonly string[]): void {
    for (const id of [...this.committed.keys()])
      if (topics.includes(id.slice(0, id.lastIndexOf(':')))) this.committed.delete(id);
  }

  wakeReadersOf(topic: string): void {
    for (const member of this.members) if (member.topics.includes(topic)) member.wake();
  }

  /** Where a member reads a partition next, or where it starts when the group has no offset (or an expired one). */
  position(tp: TopicPartition, fromBeginning: boolean): number {
    const log = tp.topic.partitions[tp.partition] as PartitionLog;
    const committed = this.committed.get(tp.id);
    if (committed !== undefined && committed >= log.start && committed <= log.end) return committed;
    const start = fromBeginning ? log.start : log.end;
    this.committed.set(tp.id, start);
    return start;
  }

  commit(tp: TopicPartition, next: number): void {
    // A topic deleted (and maybe created anew) meanwhile keeps no offsets of the old one.
    if (this.bus.topics.get(tp.topic.name) === tp.topic) this.committed.set(tp.id, next);
  }

  /** Reassigns the partitions once the batches in flight are done; resolves when every member knows its share. */
  requestRebalance(): Promise<void> {
    this.dirty = true;
    this.rebalance ??= this.rebalanceUntilSettled();
    return this.rebalance;
  }

  private async rebalanceUntilSettled(): Promise<void> {
    try {
      while (this.dirty) {
        // No batch starts while `rebalancing`; the ones under way finish (and commit) first.
        await Promise.all(this.members.map((member) => member.idle()));
        this.dirty = false;
        this.assign();
      }
    } finally {
      this.rebalance = null;
      for (const member of this.members) member.wake();
    }
  }

  /**
   * Round-robin over the partitions of every topic read, in name order, each partition to the next
   * member (in joining order) that reads its topic: kafkajs's default assigner, per subscription.
   */
  private assign(): void {
    const shares = new Map<InProcessConsumer, TopicPartition[]>(this.members.map((member) => [member, []]));
    const names = [...new Set(this.members.flatMap((member) => member.topics))].sort();
    let turn = 0;
    for (const name of names) {
      const topic = this.bus.topics.get(name);
      if (!topic) continue;
      const readers = this.members.filter((member) => member.topics.includes(name));
      for (let partition = 0; partition < topic.partitions.length; partition++) {
        const reader = readers[turn++ % readers.length] as InProcessConsumer;
        const tp = { topic, partition, id: `${name}:${partition}` };
        shares.get(reader)?.push(tp);
        // Where a member starts is fixed now, as Kafka resolves it on joining: later messages are read.
        this.position(tp, reader.fromBeginning);
      }
    }
    for (const [member, share] of shares) member.assign(share);
    for (const [member] of shares) member.announceAssignment();
  }
}

class InProcessAdmin implements MessagingAdmin {
  private closed = false;

  constructor(private readonly bus: Bus) {}

  async createTopics(topics: readonly TopicSpec[]): Promise<void> {
    this.ensureOpen();
    const missing = topics.filter((topic) => !this.bus.topics.has(topic.name));
    const names = new Set<string>();
    for (const topic of missing) {
      if (!TOPIC_NAME.test(topic.name) || topic.name === '.' || topic.name === '..')
        throw new Error(`invalid topic name "${topic.name}": 1 to 249 letters, digits, '.', '_' or '-'`);
      if (!Number.isInteger(topic.partitions) || topic.partitions < 1)
        throw new Error(
          `topic ${topic.name}: partitions must be a positive integer, not ${topic.partitions}`,
        );
      if (names.has(topic.name)) throw new Error(`topic ${topic.name} is listed twice`);
      names.add(topic.name);
    }
    if (missing.length === 0) return;
    for (const topic of missing)
      this.bus.topics.set(
        topic.name,
        new Topic(
          topic.name,
          topic.partitions,
          this.bus.settings.retain,
          maxMessageBytesOf(topic),
          (topic.config?.['cleanup.policy'] ?? '').split(',').includes('compact'),
        ),
      );
    this.bus.topicsChanged([...names]);
  }

  async listTopics(): Promise<string[]> {
    this.ensureOpen();
    return [...this.bus.topics.keys()];
  }

  async partitionCount(topic: string): Promise<number> {
    this.ensureOpen();
    const found = this.bus.topics.get(topic);
    if (!found) throw new Error(`topic ${topic} does not exist`);
    return found.partitions.length;
  }

  async deleteTopics(names: readonly string[]): Promise<void> {
    this.ensureOpen();
    for (const name of names) if (!this.bus.topics.has(name)) throw new Error(`topic ${name} does not exist`);
    for (const name of names) this.bus.topics.delete(name);
    if (names.length > 0) this.bus.topicsChanged(names);
  }

  async listGroups(): Promise<string[]> {
    this.ensureOpen();
    return [...this.bus.groups.keys()].sort();
  }

  async consumerLag(groupId: string): Promise<PartitionLag[]> {
    this.ensureOpen();
    return this.bus.groups.get(groupId)?.lag() ?? [];
  }

  async groupMembers(groupId: string): Promise<GroupMember[]> {
    this.ensureOpen();
    return this.bus.groups.get(groupId)?.view() ?? [];
  }

  async partitionOffsets(topic: string): Promise<PartitionRange[]> {
    this.ensureOpen();
    return this.bus.topic(topic).partitions.map((log, partition) => ({
      partition,
      start: log.start,
      end: log.end,
    }));
  }

  async readMessages(
    topic: string,
    partition: number,
    from: number,
    max: number,
  ): Promise<IncomingMessage[]> {
    this.ensureOpen();
    const found = this.bus.topic(topic);
    const log = found.partitions[partition];
    if (!log) throw new Error(`topic ${topic} has no partition ${partition}`);
    const tp = { topic: found, partition, id: `${topic}:${partition}` };
    const read: IncomingMessage[] = [];
    for (let offset = Math.max(from, log.start); offset < log.end && read.length < max; offset++) {
      const message = log.get(offset);
      if (message) read.push(incoming(tp, message));
    }
    return read;
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  private ensureOpen(): void {
    if (this.closed) throw new Error('the admin is closed');
  }
}

function maxMessageBytesOf(topic: TopicSpec): number {
  const configured = topic.config?.['max.message.bytes'];
  if (configured === undefined) return DEFAULT_MAX_MESSAGE_BYTES;
  const limit = Number(configured);
  if (!Number.isInteger(limit) || limit <= 0)
    throw new Error(`topic ${topic.name}: max.message.bytes must be a positive integer, not "${configured}"`);
  return limit;
}

/** A message as the bus keeps it, copied from what the producer was given. */
function storedMessage(message: OutgoingMessage): Omit<StoredMessage, 'offset'> {
  const tombstone = message.value === null;
  const value =
    message.value === null
      ? Buffer.alloc(0)
      : typeof message.value === 'string'
        ? Buffer.from(message.value, 'utf8')
        : Buffer.from(message.value);
  const headers: Record<string, string> = { ...message.headers };
  const bytes =
    value.length +
    (message.key === null ? 0 : Buffer.byteLength(message.key)) +
    Object.entries(headers).reduce(
      (sum, [name, text]) => sum + Buffer.byteLength(name) + Buffer.byteLength(text),
      0,
    );
  return { key: message.key, value, tombstone, headers, timestamp: Date.now(), bytes };
}

class InProcessProducer implements MessageProducer {
  private closed = false;

  constructor(private readonly bus: Bus) {}

  async send(topic: string, messages: readonly OutgoingMessage[]): Promise<void> {
    await this.sendAll([{ topic, messages }]);
  }

  async sendAll(sends: readonly TopicMessages[]): Promise<void> {
    if (this.closed) throw new Error('the producer is closed');
    const planned = sends
      .filter(({ messages }) => messages.length > 0)
      .map(({ topic, messages }) => {
        const target = this.bus.topic(topic);
        const { oversized } = batchesUnderLimit(messages, target.maxMessageBytes);
        if (oversized.length > 0)
          throw new MessageTooLargeError(
            topic,
            oversized.map((index) => messages[index]?.key ?? null),
            target.maxMessageBytes,
          );
        return { topic, target, stored: messages.map(storedMessage) };
      });
    // Every topic's messages copied before the first is appended: a call is appended whole, or not at all.
    for (const { topic, target, stored } of planned) {
      for (const message of stored)
        (target.partitions[target.partitionOf(message.key)] as PartitionLog).append(message);
      this.bus.produced(topic);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

/** A batch given to the handler and not committed yet, with when it may be given again if it failed. */
interface PendingBatch {
  readonly tp: TopicPartition;
  messages: readonly StoredMessage[];
  /** The offset to commit once handled: past the last message, and past the gaps after it. */
  readonly next: number;
  retryAt?: number;
}

class InProcessConsumer implements MessageConsumer {
  readonly topics: readonly string[];
  readonly fromBeginning: boolean;
  private readonly listeners: ((assignment: PartitionAssignment) => void)[] = [];
  private readonly group: Group;
  private state: 'created' | 'running' | 'closed' = 'created';
  private handler: BatchHandler | null = null;
  private share: TopicPartition[] = [];
  /** Where the round-robin over this member's partitions resumes. */
  private cursor = 0;
  /** Batches whose handler threw, by partition: given again, whole, after a pause. */
  private readonly failed = new Map<string, PendingBatch>();
  private inFlight: Promise<void> | null = null;
  private wakeUp: (() => void) | null = null;
  private closing: Promise<void> | null = null;

  constructor(
    private readonly bus: Bus,
    options: ConsumerOptions,
  ) {
    this.topics = [...new Set(options.topics)];
    this.fromBeginning = options.fromBeginning ?? false;
    this.group = bus.group(options.groupId);
  }

  onAssignment(listener: (assignment: PartitionAssignment) => void): void {
    this.listeners.push(listener);
  }

  async start(handler: BatchHandler): Promise<void> {
    if (this.state === 'closed') throw new Error('the consumer is closed');
    if (this.state === 'running') return;
    this.state = 'running';
    this.handler = handler;
    this.pump().catch((error: unknown) =>
      this.log('error', 'delivery stopped on an unexpected error', { error: errorText(error) }),
    );
    await this.group.join(this);
  }

  close(): Promise<void> {
    this.closing ??= this.stop();
    return this.closing;
  }

  /** Resolves when no batch of this member is in flight. */
  idle(): Promise<void> {
    return this.inFlight ?? Promise.resolve();
  }

  /** The partitions this member holds now, by topic. */
  assignment(): PartitionAssignment {
    const byTopic: Record<string, number[]> = {};
    for (const tp of this.share) (byTopic[tp.topic.name] ??= []).push(tp.partition);
    return byTopic;
  }

  assign(share: TopicPartition[]): void {
    this.share = share;
    this.cursor = 0;
    // A failed batch stays due only on a partition kept (of the same topic, not one created anew).
    const kept = new Map(share.map((tp) => [tp.id, tp.topic]));
    for (const [id, pending] of [...this.failed])
      if (kept.get(id) !== pending.tp.topic) this.failed.delete(id);
  }

  announceAssignment(): void {
    const assignment: Record<string, number[]> = {};
    for (const tp of this.share) (assignment[tp.topic.name] ??= []).push(tp.partition);
    for (const listener of this.listeners) {
      try {
        listener(assignment);
      } catch (error) {
        this.log('error', 'an assignment listener threw', { error: errorText(error) });
      }
    }
  }

  /** Something may be there to read: the delivery loop looks (on the next turn of the event loop, never now). */
  wake(): void {
    const wakeUp = this.wakeUp;
    this.wakeUp = null;
    if (wakeUp) setImmediate(wakeUp);
  }

  private async stop(): Promise<void> {
    const wasRunning = this.state === 'running';
    this.state = 'closed';
    this.wake();
    await this.idle();
    if (wasRunning) this.group.leave(this);
    this.failed.clear();
  }

  /** Delivers batches one at a time, round-robin over this member's partitions, until closed. */
  private async pump(): Promise<void> {
    while (this.state === 'running') {
      const batch = this.group.rebalancing ? null : this.nextBatch();
      if (!batch) {
        await this.sleep();
        continue;
      }
      this.inFlight = this.deliver(batch);
      await this.inFlight;
      this.inFlight = null;
      // Yields to I/O and timers between batches, however busy the bus.
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  private nextBatch(): PendingBatch | null {
    const now = Date.now();
    for (let turn = 0; turn < this.share.length; turn++) {
      const index = (this.cursor + turn) % this.share.length;
      const tp = this.share[index] as TopicPartition;
      if (this.bus.topics.get(tp.topic.name) !== tp.topic) continue;
      const failed = this.failed.get(tp.id);
      if (failed) {
        if ((failed.retryAt ?? 0) > now) continue;
        this.cursor = index + 1;
        return failed;
      }
      const log = tp.topic.partitions[tp.partition] as PartitionLog;
      const from = this.group.position(tp, this.fromBeginning);
      if (from >= log.end) continue;
      const messages: StoredMessage[] = [];
      let bytes = 0;
      let next = from;
      for (; next < log.end; next++) {
        const message = log.get(next);
        if (!message) continue;
        if (messages.length > 0 && bytes + message.bytes > this.bus.settings.maxBatchBytes) break;
        messages.push(message);
        bytes += message.bytes;
      }
      if (messages.length === 0) {
        // Only compaction's gaps: nothing to hand over, but past them is where the group stands.
        this.group.commit(tp, next);
        continue;
      }
      this.cursor = index + 1;
      return { tp, messages, next };
    }
    return null;
  }

  private async deliver(pending: PendingBatch): Promise<void> {
    const { tp } = pending;
    const batch: MessageBatch = {
      topic: tp.topic.name,
      partition: tp.partition,
      messages: pending.messages.map((message) => incoming(tp, message)),
    };
    let handled = -1;
    const control: BatchControl = {
      handledUpTo: (offset) => {
        handled = Math.max(handled, Number(offset));
      },
      heartbeat: async () => undefined,
      isRunning: () => this.state === 'running' && this.share.some((each) => each.id === tp.id),
    };
    try {
      await (this.handler as BatchHandler)(batch, control);
    } catch (error) {
      if (handled >= 0) {
        // What the handler dealt with is committed; the batch given again starts after it.
        pending.messages = pending.messages.filter((message) => message.offset > handled);
        if (pending.messages.length === 0) {
          this.failed.delete(tp.id);
          this.group.commit(tp, pending.next);
          return;
        }
        this.group.commit(tp, (pending.messages[0] as StoredMessage).offset);
      }
      const first = pending.messages[0]?.offset;
      const last = pending.messages[pending.messages.length - 1]?.offset;
      this.log('error', 'the handler failed; its batch will be given again', {
        groupId: this.group.id,
        topic: tp.topic.name,
        partition: tp.partition,
        offsets: `${first}-${last}`,
        error: errorText(error),
      });
      pending.retryAt = Date.now() + this.bus.settings.retryBackoffMs;
      this.failed.set(tp.id, pending);
      return;
    }
    this.failed.delete(tp.id);
    this.group.commit(tp, pending.next);
  }

  private sleep(): Promise<void> {
    return new Promise((resolve) => {
      // A rebalance wakes every member when it is done; a failed batch is not due before.
      const retryAt = this.group.rebalancing
        ? Infinity
        : Math.min(...[...this.failed.values()].map((pending) => pending.retryAt ?? 0));
      const timer = Number.isFinite(retryAt)
        ? setTimeout(() => this.wake(), Math.max(0, retryAt - Date.now()))
        : undefined;
      this.wakeUp = () => {
        if (timer) clearTimeout(timer);
        resolve();
      };
      if (this.state !== 'running') this.wake();
    });
  }

  private log(level: MessagingLogEntry['level'], message: string, extra: Record<string, unknown>): void {
    try {
      this.bus.settings.log({ level, namespace: 'InProcessConsumer', message, extra });
    } catch {
      // A log that fails must not stop delivery.
    }
  }
}

function incoming(tp: TopicPartition, message: StoredMessage): IncomingMessage {
  return {
    topic: tp.topic.name,
    partition: tp.partition,
    offset: String(message.offset),
    key: message.key,
    // Each delivery gets its own copy, as from a broker: a handler cannot alter what others read.
    value: Buffer.from(message.value),
    ...(message.tombstone ? { tombstone: true as const } : {}),
    headers: { ...message.headers },
    timestamp: message.timestamp,
  };
}

function errorText(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}
