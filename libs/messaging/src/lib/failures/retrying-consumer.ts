import type { RetryPolicy } from '@policygen/sdk';
import { deadLetterTopicOf, retryPolicy } from '@policygen/sdk';
import type { DeadLetters } from '../dead-letters';
import type {
  BatchControl,
  BatchHandler,
  ConsumerOptions,
  MessageConsumer,
  Messaging,
  PartitionAssignment,
} from '../messaging';
import type { DeliveryMonitor } from './delivery-monitor';
import { deliverWithRetryBudget } from './retry-budget';

export interface RetryingConsumerOptions extends ConsumerOptions {
  /** Where messages given up go (`<topic>.dlq`, created if missing). */
  readonly deadLetters: DeadLetters;
  /** The retry budget (default: 5 tries, 200 ms doubling to 10 s, 20 % jitter). */
  readonly retry?: Partial<RetryPolicy>;
  /** Counts retries and transient failures, and knows the partitions waiting on one. */
  readonly monitor?: DeliveryMonitor;
}

/** The delivery of a batch was given up because the consumer stops or lost the partition: nothing is committed past what was handled. */
export class DeliveryStopped extends Error {
  constructor() {
    super('the consumer stopped (or lost the partition) while a batch waited for a retry');
    this.name = 'DeliveryStopped';
  }
}

/** How often a member waiting on a retry tells its group it is alive. */
const HEARTBEAT_MS = 3_000;
/** How often a wait looks whether the consumer stops. */
const WAIT_SLICE_MS = 250;

/**
 * A consumer whose handler's failures its transport owns: each batch is delivered under a retry
 * budget (`deliverWithRetryBudget`), so a poison message ends in its topic's DLQ and never stalls
 * its partition, and a transient failure waits without dead-lettering anything.
 */
export async function createRetryingConsumer(
  messaging: Messaging,
  options: RetryingConsumerOptions,
): Promise<MessageConsumer> {
  const policy = retryPolicy(options.retry);
  const admin = await messaging.createAdmin();
  try {
    await admin.createTopics(
      options.topics.map((topic) => ({ name: deadLetterTopicOf(topic), partitions: 1 })),
    );
  } finally {
    await admin.close();
  }
  const { deadLetters: _deadLetters, retry: _retry, monitor: _monitor, ...consumerOptions } = options;
  return new RetryingConsumer(await messaging.createConsumer(consumerOptions), options, policy);
}

class RetryingConsumer implements MessageConsumer {
  private stopping = false;
  private readonly wakers = new Set<() => void>();

  constructor(
    private readonly inner: MessageConsumer,
    private readonly options: RetryingConsumerOptions,
    private readonly policy: RetryPolicy,
  ) {}

  start(handler: BatchHandler): Promise<void> {
    const { groupId, deadLetters, monitor } = this.options;
    return this.inner.start(async (batch, control) => {
      const observer = monitor?.observe(groupId, batch.topic, batch.partition);
      const beat = setInterval(() => void control.heartbeat().catch(() => undefined), HEARTBEAT_MS);
      try {
        await deliverWithRetryBudget(batch.messages, {
          policy: this.policy,
          handle: (messages) =>
            handler(messages === batch.messages ? batch : { ...batch, messages }, control),
          deadLetter: (message, failure) => deadLetters.failed(message, failure, groupId),
          handledUpTo: (message) => control.handledUpTo(message.offset),
          wait: (ms) => this.wait(ms, control),
          ...(observer ? { observer } : {}),
        });
      } finally {
        clearInterval(beat);
        observer?.done();
      }
    });
  }

  onAssignment(listener: (assignment: PartitionAssignment) => void): void {
    this.inner.onAssignment(listener);
  }

  async close(): Promise<void> {
    this.stopping = true;
    for (const wake of this.wakers) wake();
    await this.inner.close();
  }

  private async wait(ms: number, control: BatchControl): Promise<void> {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      if (this.stopping || !control.isRunning()) throw new DeliveryStopped();
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.wakers.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, Math.min(WAIT_SLICE_MS, Math.max(0, until - Date.now())));
        this.wakers.add(wake);
      });
    }
    if (this.stopping || !control.isRunning()) throw new DeliveryStopped();
  }
}
