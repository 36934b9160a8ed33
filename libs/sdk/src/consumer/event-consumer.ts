import type { EventOf } from '../contract/schemas';
import { parseEvent } from '../contract/schemas';
import type { Topic } from '../contract/topics';
import { TOPICS, topicsFor } from '../contract/topics';
import type { BatchControl, EventTransport, RawBatch, RawMessage } from '../transport/event-transport';
import type { SdkLogger } from './logger';
import { stderrLogger } from './logger';
import type { RetryPolicy } from './retry-policy';
import { backoffDelay, retryPolicy } from './retry-policy';
import { Slots } from './slots';

/** What a handler is given of an event: the latest-bundles topic's tombstones arrive as `null`. */
export type SubscribedEvent<T extends Topic> = T extends typeof TOPICS.latestBundles
  ? EventOf[T] | null
  : EventOf[T];

/** Where an event came from, and which try this is. */
export interface EventContext {
  /** The canonical topic (`TOPICS.*`), whatever the deployment's namespace. */
  readonly topic: Topic;
  readonly partition: number;
  readonly offset: string;
  readonly key: string | null;
  readonly headers: Readonly<Record<string, string>>;
  readonly timestamp: number;
  /** 1 on the first try. */
  readonly attempt: number;
}

export type EventHandler<T extends Topic> = (
  event: SubscribedEvent<T>,
  context: EventContext,
) => Promise<void> | void;

export interface EventConsumerOptions {
  readonly transport: EventTransport;
  /** The consumer group: members of one group share the partitions; each group gets every event. */
  readonly groupId: string;
  /** The deployment's topic namespace (POLICYGEN_TOPIC_NAMESPACE), if it has one. */
  readonly namespace?: string;
  /** Where a group with no committed position starts (default: the oldest event). */
  readonly fromBeginning?: boolean;
  /** Handlers running at once, at most (default 8). Events of one key always run one after the other. */
  readonly concurrency?: number;
  readonly retry?: Partial<RetryPolicy>;
  readonly logger?: SdkLogger;
  /** A one-off read: nothing committed, the group forgotten at stop (as `readLatestBundles` reads). */
  readonly ephemeral?: boolean;
}

/** What a consumer did so far. */
export interface ConsumerStats {
  /** Events handled (their handler resolved). */
  readonly handled: number;
  /** Handler tries that failed and were tried again. */
  readonly retried: number;
  /** Messages sent to a dead-letter topic: not valid events, or failing every try. */
  readonly deadLettered: number;
  readonly inFlight: number;
}

type AnyHandler = (event: unknown, context: EventContext) => Promise<void> | void;

class Stopping extends Error {}

/**
 * A typed, at-least-once consumer of Policygen's events. Every message is validated against its
 * topic's schema: one that is not a valid event goes to the topic's `.dlq` with the reason at once;
 * a handler that keeps failing is tried `retry.attempts` times with backoff, then its message goes
 * to the `.dlq` too. Neither ever holds up the messages after it. Events of one key (a node, a
 * relay) are handled in order; different keys run concurrently, at most `concurrency` at once.
 */
export class EventConsumer {
  private readonly handlers = new Map<Topic, AnyHandler>();
  private readonly slots: Slots;
  private readonly retry: RetryPolicy;
  private readonly logger: SdkLogger;
  private readonly busNames: Readonly<Record<Topic, string>>;
  private readonly canonical = new Map<string, Topic>();
  private readonly caughtUpWaiters = new Map<
    Topic,
    { promise: Promise<void>; resolve: () => void; reject: (error: Error) => void }
  >();
  private readonly sleepers = new Set<() => void>();
  private state: 'idle' | 'running' | 'stopping' | 'stopped' = 'idle';
  private counts = { handled: 0, retried: 0, deadLettered: 0 };

  constructor(private readonly options: EventConsumerOptions) {
    if (!options.groupId) throw new Error('a consumer needs a groupId');
    this.slots = new Slots(options.concurrency ?? 8);
    this.retry = retryPolicy(options.retry);
    this.logger = options.logger ?? stderrLogger;
    const names = topicsFor(options.namespace);
    this.busNames = Object.fromEntries(
      (Object.keys(TOPICS) as (keyof typeof TOPICS)[]).map((name) => [TOPICS[name], names[name]]),
    ) as Record<Topic, string>;
    for (const [topic, busName] of Object.entries(this.busNames)) this.canonical.set(busName, topic as Topic);
  }

  /** Handles the events of a topic; call before `start`, once per topic. */
  subscribe<T extends Topic>(topic: T, handler: EventHandler<T>): this {
    if (this.state !== 'idle') throw new Error('subscribe before start');
    if (!(topic in this.busNames)) throw new Error(`no Policygen topic "${topic}" (see TOPICS)`);
    if (this.handlers.has(topic)) throw new Error(`already subscribed to ${topic}`);
    this.handlers.set(topic, handler as AnyHandler);
    return this;
  }

  /** Joins the group and starts delivery; resolves once it runs. */
  async start(): Promise<void> {
    if (this.state !== 'idle') throw new Error(`the consumer is ${this.state}`);
    if (this.handlers.size === 0) throw new Error('subscribe to at least one topic before start');
    this.state = 'running';
    const topics = [...this.handlers.keys()];
    for (const topic of topics) this.caughtUpWaiter(topic);
    await this.options.transport.start(
      {
        groupId: this.options.groupId,
        topics: topics.map((topic) => this.busNames[topic]),
        fromBeginning: this.options.fromBeginning ?? true,
        concurrentPartitions: this.slots.size,
        ...(this.options.ephemeral ? { ephemeral: true } : {}),
        onCaughtUp: (busName) => {
          const topic = this.canonical.get(busName);
          if (topic) this.caughtUpWaiter(topic).resolve();
        },
      },
      (batch, control) => this.handleBatch(batch, control),
    );
    this.logger.info(
      { groupId: this.options.groupId, topics, source: this.options.transport.description },
      'consumer started',
    );
  }

  /**
   * Resolves once every event that was in the topic when the consumer started has been handled
   * (by this member: in a group of several, of the partitions it holds).
   */
  caughtUp(topic: Topic): Promise<void> {
    return this.caughtUpWaiter(topic).promise;
  }

  /**
   * Stops taking new events, lets the handlers that run finish (a retry waiting is given up: its
   * event is delivered again next time), commits what was handled, and disconnects.
   */
  async stop(): Promise<void> {
    if (this.state === 'stopped' || this.state === 'stopping') return;
    const wasRunning = this.state === 'running';
    this.state = 'stopping';
    for (const wake of this.sleepers) wake();
    if (wasRunning) await this.options.transport.stop();
    for (const waiter of this.caughtUpWaiters.values())
      waiter.reject(new Error('the consumer stopped before it caught up'));
    this.state = 'stopped';
    this.logger.info({ groupId: this.options.groupId, ...this.stats() }, 'consumer stopped');
  }

  stats(): ConsumerStats {
    return { ...this.counts, inFlight: this.slots.inUse };
  }

  private caughtUpWaiter(topic: Topic): {
    promise: Promise<void>;
    resolve: () => void;
    reject: (error: Error) => void;
  } {
    let waiter = this.caughtUpWaiters.get(topic);
    if (!waiter) {
      let resolve: () => void = () => undefined;
      let reject: (error: Error) => void = () => undefined;
      const promise = new Promise<void>((done, fail) => {
        resolve = done;
        reject = fail;
      });
      // A waiter nobody awaits must not become an unhandled rejection at stop.
      promise.catch(() => undefined);
      waiter = { promise, resolve, reject };
      this.caughtUpWaiters.set(topic, waiter);
    }
    return waiter;
  }

  private async handleBatch(batch: RawBatch, control: BatchControl): Promise<void> {
    const topic = this.canonical.get(batch.topic);
    const handler = topic && this.handlers.get(topic);
    const last = batch.messages[batch.messages.length - 1];
    if (!topic || !handler || !last) {
      if (last) control.handledUpTo(last.offset);
      return;
    }
    const progress = new BatchProgress(batch.messages, control);
    const chains = new Map<string, RawMessage[]>();
    for (const message of batch.messages) {
      const chainKey = message.key ?? '';
      const chain = chains.get(chainKey);
      if (chain) chain.push(message);
      else chains.set(chainKey, [message]);
    }
    const running = () => control.isRunning() && this.state === 'running';
    await Promise.all(
      [...chains.values()].map(async (chain) => {
        for (const message of chain) {
          if (!running()) return;
          const delivered = await this.slots.run(() => this.deliver(topic, handler, message, running));
          if (!delivered) return;
          progress.handled(message);
        }
      }),
    );
  }

  /** True once the message is dealt with (handled, or dead-lettered); false if stopped before. */
  private async deliver(
    topic: Topic,
    handler: AnyHandler,
    message: RawMessage,
    running: () => boolean,
  ): Promise<boolean> {
    const event = this.read(topic, message);
    if (!event.ok) {
      await this.deadLetter(message, event.reason, 1);
      return true;
    }
    for (let attempt = 1; ; attempt += 1) {
      try {
        await handler(event.value, {
          topic,
          partition: message.partition,
          offset: message.offset,
          key: message.key,
          headers: message.headers,
          timestamp: message.timestamp,
          attempt,
        });
        this.counts.handled += 1;
        return true;
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        if (attempt >= this.retry.attempts) {
          await this.deadLetter(message, `the handler failed ${attempt} time(s); last: ${reason}`, attempt);
          return true;
        }
        this.counts.retried += 1;
        this.logger.warn(
          {
            topic,
            partition: message.partition,
            offset: message.offset,
            key: message.key,
            attempt,
            err: reason,
          },
          'handler failed: trying again',
        );
        try {
          await this.sleep(backoffDelay(this.retry, attempt), running);
        } catch (stopped) {
          if (stopped instanceof Stopping) return false;
          throw stopped;
        }
      }
    }
  }

  private read(
    topic: Topic,
    message: RawMessage,
  ): { ok: true; value: unknown } | { ok: false; reason: string } {
    if (message.value === null) {
      if (topic === TOPICS.latestBundles) return { ok: true, value: null };
      return { ok: false, reason: '$: a tombstone (no value) on a topic of events' };
    }
    const parsed = parseEvent(topic, message.value);
    if (parsed.ok) return { ok: true, value: parsed.event };
    return {
      ok: false,
      reason: parsed.issues.map((issue) => `${issue.path}: ${issue.message}`).join('; '),
    };
  }

  private async deadLetter(message: RawMessage, reason: string, attempts: number): Promise<void> {
    // If this fails the batch fails, and comes again: a message is never dropped silently.
    await this.options.transport.deadLetter(message, reason, { attempts, groupId: this.options.groupId });
    this.counts.deadLettered += 1;
    this.logger.warn(
      {
        topic: message.topic,
        partition: message.partition,
        offset: message.offset,
        key: message.key,
        reason,
      },
      'message sent to the dead-letter topic',
    );
  }

  private sleep(ms: number, running: () => boolean): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (!running()) {
        reject(new Stopping());
        return;
      }
      const wake = () => {
        clearTimeout(timer);
        this.sleepers.delete(wake);
        reject(new Stopping());
      };
      const timer = setTimeout(() => {
        this.sleepers.delete(wake);
        if (running()) resolve();
        else reject(new Stopping());
      }, ms);
      this.sleepers.add(wake);
    });
  }
}

/** Reports the longest run of handled messages from the batch's start, however they finish. */
class BatchProgress {
  private readonly done = new Set<string>();
  private next = 0;

  constructor(
    private readonly messages: readonly RawMessage[],
    private readonly control: BatchControl,
  ) {}

  handled(message: RawMessage): void {
    this.done.add(message.offset);
    let advanced: string | null = null;
    for (
      let current = this.messages[this.next];
      current && this.done.has(current.offset);
      current = this.messages[this.next]
    ) {
      advanced = current.offset;
      this.done.delete(current.offset);
      this.next += 1;
    }
    if (advanced !== null) this.control.handledUpTo(advanced);
  }
}
