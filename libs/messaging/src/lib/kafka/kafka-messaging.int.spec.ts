import { randomUUID } from 'node:crypto';
import { eventually, getTestInfrastructure } from '@policygen/testing-infra';
import type {
  IncomingMessage,
  MessageConsumer,
  MessageProducer,
  MessagingAdmin,
  PartitionAssignment,
} from '../messaging';
import { createKafkaMessaging } from './kafka-messaging';

const MESSAGES = 1_000;
const KEYS = 37;
const PARTITIONS = 3;

interface Received {
  readonly member: string;
  readonly message: IncomingMessage;
  readonly key: string;
  readonly seq: number;
}

describe('Kafka adapter against a real broker', () => {
  const infra = getTestInfrastructure();
  const messaging = createKafkaMessaging({
    brokers: infra.kafkaBrokers,
    clientId: 'messaging-it',
    log: () => undefined,
  });
  const topic = `it.messaging.${randomUUID()}`;
  let admin: MessagingAdmin;
  let producer: MessageProducer;
  const consumers: MessageConsumer[] = [];

  beforeAll(async () => {
    admin = await messaging.createAdmin();
    producer = await messaging.createProducer({ idempotent: true });
  });

  afterAll(async () => {
    await Promise.all(consumers.map((consumer) => consumer.close()));
    await producer.close();
    await admin.deleteTopics([topic]);
    await admin.close();
  });

  it('creates a topic with 3 partitions, idempotently', async () => {
    await admin.createTopics([{ name: topic, partitions: PARTITIONS }]);
    await admin.createTopics([{ name: topic, partitions: PARTITIONS }]);
    expect(await admin.listTopics()).toContain(topic);
    expect(await admin.partitionCount(topic)).toBe(PARTITIONS);
  });

  it('delivers 1,000 keyed messages to a group of two exactly once, in order per key', async () => {
    const groupId = `it-group-${randomUUID()}`;
    const received: Received[] = [];
    const assignments = new Map<string, PartitionAssignment>();

    for (const member of ['member-a', 'member-b']) {
      const consumer = await messaging.createConsumer({ groupId, topics: [topic], fromBeginning: true });
      consumers.push(consumer);
      consumer.onAssignment((assignment) => assignments.set(member, assignment));
      await consumer.start(async (batch) => {
        for (const message of batch.messages) {
          const body = JSON.parse(message.value.toString('utf8')) as { key: string; seq: number };
          received.push({ member, message, key: body.key, seq: body.seq });
        }
      });
    }

    // Produce only once both members hold a share of the partitions, so that no rebalance
    // happens while messages flow and "exactly once" is what the group must deliver.
    const partitionsOf = (member: string): readonly number[] => assignments.get(member)?.[topic] ?? [];
    await eventually(
      () => {
        const a = partitionsOf('member-a');
        const b = partitionsOf('member-b');
        return (
          a.length > 0 &&
          b.length > 0 &&
          new Set([...a, ...b]).size === PARTITIONS &&
          a.length + b.length === PARTITIONS
        );
      },
      { what: 'both group members to be assigned partitions', timeoutMs: 60_000 },
    );

    const nextSeq = new Map<string, number>();
    const outgoing = Array.from({ length: MESSAGES }, (_, index) => {
      const key = `node-${index % KEYS}`;
      const seq = nextSeq.get(key) ?? 0;
      nextSeq.set(key, seq + 1);
      return { key, value: JSON.stringify({ key, seq }), headers: { 'content-type': 'application/json' } };
    });
    for (let start = 0; start < outgoing.length; start += 100) {
      await producer.send(topic, outgoing.slice(start, start + 100));
    }

    await eventually(() => received.length >= MESSAGES, { what: `${MESSAGES} messages`, timeoutMs: 60_000 });
    // Anything delivered twice would arrive right behind the originals; give it the chance to.
    await new Promise((resolve) => setTimeout(resolve, 1_000));

    expect(received).toHaveLength(MESSAGES);
    expect(new Set(received.map((entry) => `${entry.key}#${entry.seq}`)).size).toBe(MESSAGES);

    const byKey = new Map<string, Received[]>();
    for (const entry of received) byKey.set(entry.key, [...(byKey.get(entry.key) ?? []), entry]);
    expect(byKey.size).toBe(KEYS);
    for (const [key, entries] of byKey) {
      expect(entries.map((entry) => entry.seq)).toEqual(entries.map((_, index) => index));
      expect(new Set(entries.map((entry) => entry.message.partition)).size).toBe(1);
      expect(entries.every((entry) => entry.message.key === key)).toBe(true);
    }
    expect(received[0]?.message.headers).toEqual({ 'content-type': 'application/json' });

    const members = new Set(received.map((entry) => entry.member));
    expect(members).toEqual(new Set(['member-a', 'member-b']));
    for (const entry of received) {
      expect(partitionsOf(entry.member)).toContain(entry.message.partition);
    }
  });
});
