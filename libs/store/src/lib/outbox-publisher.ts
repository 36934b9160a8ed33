import type { MessageProducer } from '@policygen/messaging';
import type { ConfigStore } from './config-store';

/**
 * Sends the outbox to the bus, oldest first, and marks what the broker acknowledged. The mark of a
 * send travels with the next read of the outbox (`markFirst`), not in a round trip of its own: a
 * wake-up of the service saved each window. Until then the messages are sent and not marked; a
 * crash meanwhile sends them again on the next run, as a crash between a send and its mark always
 * did: a change event carries its revision, so a consumer recognises one it has seen. Nothing
 * committed is ever lost, since the message was written in the transaction of its change.
 */
export class OutboxPublisher {
  /** Sent and acknowledged, not marked yet: marked by the next read, or by `markSent`. */
  private sent: number[] = [];

  constructor(
    private readonly store: Pick<ConfigStore, 'unpublished' | 'markPublished'>,
    private readonly producer: MessageProducer,
    private readonly batchSize = 500,
  ) {}

  /** Messages sent whose mark waits for the next read: published, though the store does not say so yet. */
  get awaitingMark(): number {
    return this.sent.length;
  }

  /** Publishes every message waiting when called; resolves with how many were sent. */
  async publishPending(): Promise<number> {
    let sent = 0;
    for (;;) {
      const messages = await this.store.unpublished(this.batchSize, this.sent);
      this.sent = [];
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
      this.sent = messages.map((message) => message.id);
      sent += messages.length;
      // A short batch was all there was when it was read: what came since is another call's.
      if (messages.length < this.batchSize) return sent;
    }
  }

  /** Marks what was sent and not marked yet (before a stop: the next run would send it again). */
  async markSent(): Promise<void> {
    const ids = this.sent;
    await this.store.markPublished(ids);
    if (this.sent === ids) this.sent = [];
  }
}
