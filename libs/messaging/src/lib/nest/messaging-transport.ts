import type { CustomTransportStrategy, MessageHandler } from '@nestjs/microservices';
import { BaseRpcContext, Server } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import type { RetryPolicy } from '@policygen/sdk';
import type { DeadLetters } from '../dead-letters';
import type { DeliveryMonitor } from '../failures/delivery-monitor';
import { createRetryingConsumer } from '../failures/retrying-consumer';
import type {
  ConsumerOptions,
  MessageBatch,
  MessageConsumer,
  Messaging,
  PartitionAssignment,
} from '../messaging';

/** What an `@EventPattern(topic, extras)` handler's extras say about its subscription. */
export interface EventPatternExtras {
  /** Which consumer group the handler reads in; the transport's `groupOf` turns it into an id. */
  readonly group?: string;
  /** Batches of up to this many partitions handled at once (default 1); see `ConsumerOptions`. */
  readonly concurrentPartitions?: number;
  /** Where a group with no committed offset starts (default: new messages only). */
  readonly fromBeginning?: boolean;
}

export interface MessagingTransportOptions {
  readonly messaging: Messaging;
  /** The real topic of a pattern, e.g. a namespaced name (default: the pattern itself). */
  readonly topicOf?: (pattern: string) => string;
  /** The consumer-group id of a handler's `group` extra (default: the extra itself). */
  readonly groupOf?: (group: string, pattern: string) => string;
  readonly sessionTimeoutMs?: number;
  /** Told the partitions of a pattern's topic this member holds, after each rebalance. */
  readonly onAssignment?: (pattern: string, partitions: readonly number[]) => void;
  /**
   * Where messages whose handler fails every try of the budget go. Without it a handler that throws
   * gets its batch again, forever: every service gives one.
   */
  readonly deadLetters?: DeadLetters;
  /** The retry budget of every handler (default: 5 tries, 200 ms doubling to 10 s). */
  readonly retry?: Partial<RetryPolicy>;
  /** Counts retries and transient failures; its waiting partitions feed the service's readiness. */
  readonly monitor?: DeliveryMonitor;
}

/** The context of a handler call: the batch it was given, and the consumer group it reads in. */
export class MessagingContext extends BaseRpcContext<[MessageBatch, string]> {
  get batch(): MessageBatch {
    return this.getArgByIndex(0);
  }

  get groupId(): string {
    return this.getArgByIndex(1);
  }
}

/**
 * A NestJS transport strategy over the messaging port: each `@EventPattern(topic, extras)`
 * handler gets its own consumer, in the group its extras name, and is given whole batches of one
 * partition (Nest's built-in Kafka transport has one consumer for every topic and no batches). A
 * batch's offsets are committed once the handler resolves. With `deadLetters`, the transport owns
 * failure: a handler that throws gets its batch again under a retry budget, then the failing
 * messages are isolated and dead-lettered (`createRetryingConsumer`); a transient failure waits.
 */
export class MessagingTransport extends Server implements CustomTransportStrategy {
  private readonly consumers: MessageConsumer[] = [];

  constructor(private readonly options: MessagingTransportOptions) {
    super();
  }

  listen(callback: (error?: unknown) => void): void {
    this.subscribeAll().then(
      () => callback(),
      (error: unknown) => callback(error),
    );
  }

  async close(): Promise<void> {
    await Promise.all(this.consumers.splice(0).map((consumer) => consumer.close()));
  }

  on(): never {
    throw new Error('MessagingTransport emits no events; use onAssignment');
  }

  unwrap<T>(): T {
    return this.options.messaging as T;
  }

  private async subscribeAll(): Promise<void> {
    for (const [pattern, handler] of this.getHandlers()) await this.subscribe(pattern, handler);
  }

  private async subscribe(pattern: string, handler: MessageHandler): Promise<void> {
    const extras = (handler.extras ?? {}) as EventPatternExtras;
    const topic = this.options.topicOf?.(pattern) ?? pattern;
    const group = extras.group ?? pattern;
    const consumerOptions: ConsumerOptions = {
      groupId: this.options.groupOf?.(group, pattern) ?? group,
      topics: [topic],
      ...(extras.fromBeginning === undefined ? {} : { fromBeginning: extras.fromBeginning }),
      ...(extras.concurrentPartitions === undefined
        ? {}
        : { concurrentPartitions: extras.concurrentPartitions }),
      ...(this.options.sessionTimeoutMs === undefined
        ? {}
        : { sessionTimeoutMs: this.options.sessionTimeoutMs }),
    };
    const { deadLetters, retry, monitor } = this.options;
    const consumer = deadLetters
      ? await createRetryingConsumer(this.options.messaging, {
          ...consumerOptions,
          deadLetters,
          ...(retry ? { retry } : {}),
          ...(monitor ? { monitor } : {}),
        })
      : await this.options.messaging.createConsumer(consumerOptions);
    this.consumers.push(consumer);
    const { onAssignment } = this.options;
    if (onAssignment)
      consumer.onAssignment((assignment: PartitionAssignment) =>
        onAssignment(pattern, assignment[topic] ?? []),
      );
    await consumer.start(async (batch) => {
      const result = await handler(batch, new MessagingContext([batch, consumerOptions.groupId]));
      await lastValueFrom(this.transformToObservable(result), { defaultValue: undefined });
    });
  }
}
