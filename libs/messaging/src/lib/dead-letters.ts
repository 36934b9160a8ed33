import type { Logger } from 'pino';
import { Counter } from 'prom-client';
import type { Registry } from 'prom-client';
import { deadLetterHeaders, deadLetterTopicOf } from '@policygen/sdk';
import type { IncomingMessage, MessageProducer } from './messaging';
import type { DeliveryFailure } from './failures/retry-budget';
import { failureText } from './failures/transient-failure';

/** Why a message went to a DLQ: it could not be read, or its handler failed every try. */
export type DeadLetterReason = 'unreadable' | 'failed';

/**
 * Sends a message nobody can handle to its topic's `.dlq`, in Policygen's one dead-letter format
 * (`DEAD_LETTER_HEADERS`): its key, value and headers as they were, with the error, the origin, the
 * attempts, when and by which group. It never holds up the messages after it.
 */
export class DeadLetters {
  private readonly counter: Counter<'topic' | 'group' | 'reason'> | null;

  constructor(
    private readonly producer: MessageProducer,
    private readonly logger: Logger,
    registry?: Registry,
  ) {
    this.counter = registry
      ? new Counter({
          name: 'policygen_messages_dead_lettered_total',
          help: 'Messages sent to a dead-letter topic: unreadable, or failing every try of their handler',
          labelNames: ['topic', 'group', 'reason'],
          registers: [registry],
        })
      : null;
  }

  /** A message that is not what its topic carries (the reader's issues, by path). */
  send(
    message: IncomingMessage,
    issues: readonly { path: string; message: string }[],
    groupId?: string,
  ): Promise<void> {
    const reason = issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ');
    return this.deliver(message, reason, 'unreadable', { attempts: 1, failedAt: new Date(), groupId });
  }

  /** A message whose handler failed every try of its budget. */
  failed(message: IncomingMessage, failure: DeliveryFailure, groupId: string): Promise<void> {
    return this.deliver(message, failureText(failure.error), 'failed', {
      attempts: failure.attempts,
      failedAt: failure.failedAt,
      groupId,
    });
  }

  private async deliver(
    message: IncomingMessage,
    error: string,
    reason: DeadLetterReason,
    details: { readonly attempts: number; readonly failedAt: Date; readonly groupId: string | undefined },
  ): Promise<void> {
    await this.producer.send(deadLetterTopicOf(message.topic), [
      {
        key: message.key,
        value: message.tombstone ? null : message.value,
        headers: deadLetterHeaders(message, error, {
          attempts: details.attempts,
          failedAt: details.failedAt,
          ...(details.groupId === undefined ? {} : { groupId: details.groupId }),
        }),
      },
    ]);
    this.counter?.inc({ topic: message.topic, group: details.groupId ?? '', reason });
    this.logger.warn(
      {
        topic: message.topic,
        partition: message.partition,
        offset: message.offset,
        key: message.key,
        group: details.groupId,
        attempts: details.attempts,
        reason,
        error,
      },
      reason === 'unreadable'
        ? 'unreadable event sent to the DLQ'
        : 'message sent to the DLQ: its handler failed every try',
    );
  }
}
