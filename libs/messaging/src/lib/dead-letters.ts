import type { Logger } from 'pino';
import type { IncomingMessage, MessageProducer } from './messaging';

/** Sends an unreadable message to its topic's `.dlq` with the reason: it never holds up the others. */
export class DeadLetters {
  constructor(
    private readonly producer: MessageProducer,
    private readonly logger: Logger,
  ) {}

  async send(message: IncomingMessage, issues: readonly { path: string; message: string }[]): Promise<void> {
    const reason = issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ');
    this.logger.warn(
      { topic: message.topic, offset: message.offset, reason },
      'unreadable event sent to the DLQ',
    );
    await this.producer.send(`${message.topic}.dlq`, [
      {
        key: message.key,
        value: message.value,
        headers: {
          ...message.headers,
          'policygen-error': reason,
          'policygen-origin': `${message.topic}/${message.partition}/${message.offset}`,
        },
      },
    ]);
  }
}
