import type { MessageProducer, Messaging } from '@policygen/messaging';

/**
 * The producer of the change log: the topic exists with one partition (one total order of
 * revisions) and the producer is idempotent, so a retried send is not written twice.
 */
export async function createOutboxProducer(messaging: Messaging, topic: string): Promise<MessageProducer> {
  const admin = await messaging.createAdmin();
  try {
    await admin.createTopics([{ name: topic, partitions: 1 }]);
  } finally {
    await admin.close();
  }
  return messaging.createProducer({ idempotent: true });
}
