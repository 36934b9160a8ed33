import { randomBytes, randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { GenerationEngine, validateFleet } from '@policygen/engine';
import type { ParsedChangeSet } from '@policygen/engine';
import { parseEvent, TOPICS } from '@policygen/events';
import type { ConfigChangeEvent } from '@policygen/events';
import { createKafkaMessaging } from '@policygen/messaging';
import type { MessageConsumer, MessageProducer, Messaging } from '@policygen/messaging';
import { eventually, getTestInfrastructure } from '@policygen/testing-infra';
import { OutboxPublisher } from './outbox-publisher';
import { PostgresConfigStore } from './postgres/postgres-config-store';

/** The outbox from real Postgres to a real broker: every revision arrives, a re-send is recognisable. */
describe('OutboxPublisher', () => {
  const infra = getTestInfrastructure();
  const run = randomUUID();
  let messaging: Messaging;
  let producer: MessageProducer;
  let consumer: MessageConsumer;
  let store: PostgresConfigStore;
  let schema: string;
  const received: ConfigChangeEvent[] = [];

  beforeAll(async () => {
    messaging = createKafkaMessaging({
      brokers: infra.kafkaBrokers,
      clientId: 'outbox-it',
      log: () => undefined,
    });
    const admin = await messaging.createAdmin();
    await admin.createTopics([{ name: TOPICS.configChanges, partitions: 1 }]);
    await admin.close();
    producer = await messaging.createProducer({ idempotent: true });
    consumer = await messaging.createConsumer({
      groupId: `outbox-it-${run}`,
      topics: [TOPICS.configChanges],
      fromBeginning: true,
    });
    await consumer.start(async (batch) => {
      for (const message of batch.messages) {
        const parsed = parseEvent(TOPICS.configChanges, message.value.toString('utf8'));
        if (!parsed.ok) throw new Error(`a malformed event: ${JSON.stringify(parsed.issues)}`);
        // Other suites may share the topic: this run's events carry its id as a parameter.
        if ('changeSet' in parsed.event && JSON.stringify(parsed.event.changeSet).includes(run))
          received.push(parsed.event);
      }
    });
    schema = `outbox_${randomBytes(6).toString('hex')}`;
    store = new PostgresConfigStore({ connectionString: infra.databaseUrl, schema });
    await store.migrate();
  });

  afterAll(async () => {
    await consumer.close();
    await producer.close();
    await store.close();
    const pool = new Pool({ connectionString: infra.databaseUrl });
    await pool.query(`drop schema if exists "${schema}" cascade`);
    await pool.end();
  });

  function change(engine: GenerationEngine, index: number): ParsedChangeSet {
    const outcome = engine.apply({ upsert: { parameters: { run, [`p${index}`]: index } } });
    if (!outcome.ok) throw new Error('invalid change set');
    return outcome.change;
  }

  it('publishes every committed revision once, in order, marks it with the next commit, and resends what a crash left unmarked', async () => {
    const empty = validateFleet({});
    if (!empty.ok) throw new Error('invalid empty fleet');
    const engine = GenerationEngine.fromFleet(empty.fleet);
    for (let index = 1; index <= 3; index++) await store.commit(change(engine, index));
    const publisher = new OutboxPublisher(store, producer, 2);
    expect(await publisher.publishPending()).toBe(3);
    // Sent, not marked yet: a second run does not send them again.
    expect(await publisher.publishPending()).toBe(0);
    await eventually(() => received.length >= 3, { what: 'revisions 1 to 3 on the topic' });
    expect(received.map((event) => event.revision)).toEqual([1, 2, 3]);

    // The next commit's own statement marks them: only its message waits.
    await store.commit(change(engine, 4), { markPublished: publisher.takeMarks() });
    expect((await store.unpublished()).map((message) => message.payload)).toMatchObject([{ revision: 4 }]);

    // A crash after the send, before any mark: the next start sends it again, with its revision.
    expect(await new OutboxPublisher(store, producer).publishPending()).toBe(1);
    const restarted = new OutboxPublisher(store, producer);
    expect(await restarted.publishPending()).toBe(1);
    await eventually(() => received.length >= 5, { what: 'revision 4, sent twice' });
    expect(received.map((event) => event.revision)).toEqual([1, 2, 3, 4, 4]);
    const seen = new Set<number>();
    const fresh = received.filter((event) => !seen.has(event.revision) && seen.add(event.revision));
    expect(fresh.map((event) => event.revision)).toEqual([1, 2, 3, 4]);

    // No commit comes to carry the mark: the runs after mark it on their own.
    await restarted.publishPending();
    expect(await store.unpublished()).toHaveLength(1);
    await restarted.publishPending();
    expect(await store.unpublished()).toEqual([]);
    expect(received).toHaveLength(5);
  });

  it('marks with a commit whose expected revision no longer holds', async () => {
    const empty = validateFleet({});
    if (!empty.ok) throw new Error('invalid empty fleet');
    const engine = GenerationEngine.fromFleet(empty.fleet);
    const publisher = new OutboxPublisher(store, producer);
    await publisher.publishPending();
    await store.commitAll([{ changeSet: change(engine, 10) }]);
    expect(await publisher.publishPending()).toBe(1);
    const marks = publisher.takeMarks();
    expect(marks).toHaveLength(1);
    await expect(
      store.commit(change(engine, 11), { expectedRevision: 0, markPublished: marks }),
    ).rejects.toThrow('not 0');
    expect(await store.unpublished()).toEqual([]);
  });
});
