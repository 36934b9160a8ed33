import type { MessageProducer } from '@policygen/messaging';
import type { ConfigStore } from './config-store';

/**
 * Sends the outbox to the bus, oldest first, and marks what the broker acknowledged. A crash
 * between the send and the mark sends those messages again on the next run: a change event carries
 * its revision, so a consumer recognises one it has seen. Nothing committed is ever lost, since
 * the message was written in the transaction of its change.
 */
export class OutboxPublisher {
  constructor(
    private readonly store: Pick<ConfigStore, 'unpublished' | 'markPublished'>,
    private readonly producer: MessageProducer,
    private readonly batchSize = 500,
  ) {}

  /** Publishes every message waiting when called; resolves with how many were sent. */
  async publishPending(): Promise<number> {
    let sent = 0;
    for (;;) {
      const messages = await this.store.unpublished(this.batchSize);
      if (messages.length === 0) return sent;
      // One part per topic, in outbox order (a topic's messages keep their order), in one request.
      const topics = [...new Set(messages.map((message) => message.topic))];
      await this.producer.sendAll(
        topics.map((topic) => ({
          topic,
          messages: messages
            .filter((message) => message.topic === topic)
            .map((message) => ({ key: message.key, value: JSON.stringify(message.payload) })),
        })),
      );
      await this.store.markPublished(messages.map((message) => message.id));
      sent += messages.length;
      // A short batch was all there was when it was read: what came since is another call's.
      if (messages.length < this.batchSize) return sent;
    }
  }
}
