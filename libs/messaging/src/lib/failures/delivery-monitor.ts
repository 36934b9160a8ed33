import type { Logger } from 'pino';
import { Counter, Gauge } from 'prom-client';
import type { Registry } from 'prom-client';
import type { IncomingMessage } from '../messaging';
import type { DeliveryObserver } from './retry-budget';
import { failureText } from './transient-failure';

/** A partition whose delivery waits for the infrastructure to come back. */
export interface WaitingPartition {
  readonly group: string;
  readonly topic: string;
  readonly partition: number;
  /** When its current run of transient failures began (ms since the epoch). */
  readonly since: number;
  readonly failures: number;
  readonly reason: string;
}

/**
 * What a service's consumers go through when handlers fail: retries and transient failures as
 * metrics and logs, and the partitions waiting on a transient failure now, for readiness.
 */
export class DeliveryMonitor {
  private readonly waiting = new Map<string, WaitingPartition>();
  private readonly retried: Counter<'topic' | 'group'> | null;
  private readonly transientFailures: Counter<'topic' | 'group'> | null;

  constructor(
    private readonly logger: Logger,
    registry?: Registry,
  ) {
    this.retried = registry
      ? new Counter({
          name: 'policygen_messages_retried_total',
          help: 'Messages given to their handler again after it failed on them (each failure counts once per message)',
          labelNames: ['topic', 'group'],
          registers: [registry],
        })
      : null;
    this.transientFailures = registry
      ? new Counter({
          name: 'policygen_messages_transient_failures_total',
          help: "Handler failures that were the infrastructure's (a store or disk away or full): retried without spending the budget",
          labelNames: ['topic', 'group'],
          registers: [registry],
        })
      : null;
    if (registry) {
      const gauge: Gauge<'topic' | 'group'> = new Gauge({
        name: 'policygen_messages_waiting_partitions',
        help: 'Partitions whose delivery waits for a transient failure to pass',
        labelNames: ['topic', 'group'],
        registers: [registry],
        collect: () => {
          gauge.reset();
          for (const { topic, group } of this.waiting.values()) gauge.inc({ topic, group });
        },
      });
    }
  }

  /** The partitions waiting on a transient failure now. */
  waitingPartitions(): WaitingPartition[] {
    return [...this.waiting.values()];
  }

  /** The observer of one batch's delivery. */
  observe(group: string, topic: string, partition: number): DeliveryObserver & { done(): void } {
    const id = `${group}\n${topic}\n${partition}`;
    const where = (messages: readonly IncomingMessage[]) => ({
      group,
      topic,
      partition,
      offsets: `${messages[0]?.offset}-${messages[messages.length - 1]?.offset}`,
    });
    return {
      retrying: (messages, error, attempt, delayMs) => {
        this.retried?.inc({ topic, group }, messages.length);
        this.logger.warn(
          { ...where(messages), attempt, delayMs: Math.round(delayMs), err: failureText(error) },
          'handler failed: trying its messages again',
        );
      },
      transient: (messages, error, streak, delayMs) => {
        this.transientFailures?.inc({ topic, group });
        const reason = failureText(error);
        const since = this.waiting.get(id)?.since ?? Date.now();
        this.waiting.set(id, { group, topic, partition, since, failures: streak, reason });
        // The first failure of a run, then every tenth: a store away for an hour must not flood the log.
        if (streak === 1 || streak % 10 === 0)
          this.logger.warn(
            { ...where(messages), failures: streak, delayMs: Math.round(delayMs), err: reason },
            'transient failure: waiting for the infrastructure, the message budget untouched',
          );
      },
      recovered: (messages) => {
        const was = this.waiting.get(id);
        this.waiting.delete(id);
        if (was)
          this.logger.info(
            { ...where(messages), failures: was.failures, waitedMs: Date.now() - was.since },
            'delivery recovered from a transient failure',
          );
      },
      done: () => {
        this.waiting.delete(id);
      },
    };
  }
}
