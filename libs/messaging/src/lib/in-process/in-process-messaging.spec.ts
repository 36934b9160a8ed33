import fc from 'fast-check';
import type { MessagingLogEntry } from '../kafka/kafka-messaging';
import type { IncomingMessage, MessageBatch, Messaging, PartitionAssignment } from '../messaging';
import { describeMessagingContract } from '../messaging-contract';
import { partitionForKey } from '../partitioning/partition-for-key';
import { createInProcessMessaging } from './in-process-messaging';

describeMessagingContract('In-process bus', () => createInProcessMessaging({ log: () => undefined }));

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function until(condition: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await sleep(5);
  }
}

const text = (message: IncomingMessage): string => message.value.toString('utf8');

describe('In-process bus, beyond the contract', () => {
  let messaging: Messaging;
  let log: MessagingLogEntry[];
  const closers: (() => Promise<void>)[] = [];

  beforeEach(() => {
    log = [];
    messaging = createInProcessMessaging({ log: (entry) => log.push(entry), retryBackoffMs: 20 });
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  async function setUp(topics: Record<string, number>) {
    const admin = await messaging.createAdmin();
    closers.push(() => admin.close());
    await admin.createTopics(Object.entries(topics).map(([name, partitions]) => ({ name, partitions })));
    const producer = await messaging.createProducer();
    closers.push(() => producer.close());
    return { admin, producer };
  }

  async function reader(
    groupId: string,
    topics: string[],
    handler: (batch: MessageBatch) => Promise<void> = async () => undefined,
    fromBeginning = true,
  ) {
    const consumer = await messaging.createConsumer({ groupId, topics, fromBeginning });
    closers.push(() => consumer.close());
    const assignments: PartitionAssignment[] = [];
    const batches: MessageBatch[] = [];
    consumer.onAssignment((assignment) => assignments.push(assignment));
    await consumer.start(async (batch) => {
      await handler(batch);
      batches.push(batch);
    });
    const received = (): IncomingMessage[] => batches.flatMap((batch) => batch.messages);
    return { consumer, assignments, batches, received };
  }

  it('refuses to produce to, or consume from, a topic nobody created', async () => {
    const { producer, admin } = await setUp({ known: 1 });
    await expect(producer.send('unknown', [{ key: 'k', value: 'v' }])).rejects.toThrow(
      'topic unknown does not exist (topics are created with the admin, never on first use)',
    );
    await expect(messaging.createConsumer({ groupId: 'g', topics: ['unknown'] })).rejects.toThrow(
      'topic unknown does not exist',
    );
    await expect(admin.partitionCount('unknown')).rejects.toThrow('topic unknown does not exist');
    await expect(admin.deleteTopics(['unknown'])).rejects.toThrow('topic unknown does not exist');
    await expect(admin.createTopics([{ name: 'bad name', partitions: 1 }])).rejects.toThrow(
      'invalid topic name',
    );
    await expect(admin.createTopics([{ name: 'none', partitions: 0 }])).rejects.toThrow('positive integer');
    await producer.send('unknown', []); // nothing to send: nothing to refuse, as the Kafka adapter
    expect(await admin.listTopics()).toEqual(['known']);
  });

  it('creates topics without changing existing ones, and deletes them', async () => {
    const { admin } = await setUp({ t: 2 });
    await admin.createTopics([
      { name: 't', partitions: 5 },
      { name: 'u', partitions: 1 },
    ]);
    expect(await admin.partitionCount('t')).toBe(2);
    expect((await admin.listTopics()).sort()).toEqual(['t', 'u']);
    await admin.deleteTopics(['t']);
    expect(await admin.listTopics()).toEqual(['u']);
    await admin.close();
    await expect(admin.listTopics()).rejects.toThrow('the admin is closed');
  });

  it('puts a keyed message in the partition of its key, and spreads messages without a key round-robin', async () => {
    const { producer } = await setUp({ t: 4 });
    const keys = Array.from({ length: 20 }, (_, index) => `node-${index}`);
    await producer.send('t', [
      ...keys.map((key) => ({ key, value: key })),
      ...Array.from({ length: 8 }, () => ({ key: null, value: 'none' })),
    ]);
    const all = await reader('g', ['t']);
    await until(() => all.received().length === 28, '28 messages');
    const keyed = all.received().filter((message) => message.key !== null);
    expect(keyed.map((message) => [message.key, message.partition])).toEqual(
      expect.arrayContaining(keys.map((key) => [key, partitionForKey(key, 4)])),
    );
    expect(keyed).toHaveLength(keys.length);
    const unkeyed = all.received().filter((message) => message.key === null);
    expect(unkeyed.map((message) => message.partition).sort()).toEqual([0, 0, 1, 1, 2, 2, 3, 3]);
  });

  it('never calls a handler inside send', async () => {
    const { producer } = await setUp({ t: 1 });
    let handling = false;
    let calledDuringSend = false;
    const all = await reader('g', ['t'], async () => {
      calledDuringSend ||= handling;
    });
    handling = true;
    const sent = producer.send('t', [{ key: 'k', value: 'v' }]);
    handling = false;
    await sent;
    await until(() => all.received().length === 1, 'the message');
    expect(calledDuringSend).toBe(false);
  });

  it('rebalances as members join and leave, telling every member its partitions each time', async () => {
    const { producer } = await setUp({ t: 3, other: 1 });
    const a = await reader('g', ['t']);
    // A member knows its partitions by the time start resolves, as with kafkajs.
    expect(a.assignments).toEqual([{ t: [0, 1, 2] }]);
    const b = await reader('g', ['t']);
    expect(a.assignments.at(-1)).toEqual({ t: [0, 2] });
    expect(b.assignments).toEqual([{ t: [1] }]);
    const c = await reader('g', ['t', 'other']);
    // Round-robin over the partitions of every topic read (in name order), each to the next member reading it.
    expect([a, b, c].map((member) => member.assignments.at(-1))).toEqual([
      { t: [2] },
      { t: [0] },
      { other: [0], t: [1] },
    ]);
    const d = await reader('g', ['t']);
    const e = await reader('g', ['t']);
    expect([a, b, c, d, e].map((member) => member.assignments.at(-1))).toEqual([
      {},
      { t: [0] },
      { other: [0], t: [1] },
      { t: [2] },
      {},
    ]);

    await producer.send(
      't',
      Array.from({ length: 30 }, (_, index) => ({ key: `k${index}`, value: `m${index}` })),
    );
    await until(() => [a, b, c, d, e].flatMap((member) => member.received()).length === 30, '30 messages');
    for (const member of [a, b, c, d, e])
      for (const message of member.received())
        expect(member.assignments.at(-1)?.['t'] ?? []).toContain(message.partition);

    await c.consumer.close();
    await d.consumer.close();
    await until(() => e.assignments.at(-1)?.['t']?.length === 1, 'the rebalance after two members left');
    expect([a, b, e].map((member) => member.assignments.at(-1))).toEqual([
      { t: [0] },
      { t: [1] },
      { t: [2] },
    ]);
    expect(c.assignments).toHaveLength(3);
  });

  it('gives a batch again after a pause while its handler throws, and other partitions meanwhile', async () => {
    const { producer } = await setUp({ t: 2 });
    const key0 = ['a', 'b', 'c', 'd', 'e'].find((key) => partitionForKey(key, 2) === 0) as string;
    const key1 = ['a', 'b', 'c', 'd', 'e'].find((key) => partitionForKey(key, 2) === 1) as string;
    let failures = 0;
    const attempts: { partition: number; offsets: string[]; at: number }[] = [];
    const all = await reader('g', ['t'], async (batch) => {
      attempts.push({
        partition: batch.partition,
        offsets: batch.messages.map((message) => message.offset),
        at: Date.now(),
      });
      if (batch.partition === 0 && failures++ < 3) throw new Error('poison');
    });
    await producer.send('t', [
      { key: key0, value: 'p0-a' },
      { key: key0, value: 'p0-b' },
    ]);
    await until(() => attempts.length >= 1, 'the first attempt');
    await producer.send('t', [{ key: key1, value: 'p1' }]);
    await until(() => all.received().length === 3, 'every message');

    const onZero = attempts.filter((attempt) => attempt.partition === 0);
    expect(onZero.map((attempt) => attempt.offsets)).toEqual(Array(4).fill(['0', '1']));
    for (let index = 1; index < onZero.length; index++)
      expect((onZero[index]?.at ?? 0) - (onZero[index - 1]?.at ?? 0)).toBeGreaterThanOrEqual(15);
    // The other partition did not wait for the poisoned one to heal.
    const onOne = attempts.findIndex((attempt) => attempt.partition === 1);
    expect(onOne).toBeLessThan(attempts.length - 1);
    expect(log.filter((entry) => entry.level === 'error')).toHaveLength(3);
    expect(log[0]?.extra).toMatchObject({ groupId: 'g', topic: 't', partition: 0, offsets: '0-1' });
  });

  it('delivers one batch at a time per consumer, of consecutive messages of one partition', async () => {
    const { producer } = await setUp({ t: 3 });
    let inFlight = 0;
    let most = 0;
    const all = await reader('g', ['t'], async () => {
      most = Math.max(most, ++inFlight);
      await sleep(1);
      inFlight--;
    });
    for (let round = 0; round < 10; round++)
      await producer.send(
        't',
        Array.from({ length: 20 }, (_, index) => ({ key: `k${index}`, value: `${round}` })),
      );
    await until(() => all.received().length === 200, '200 messages');
    expect(most).toBe(1);
    const next = new Map<number, number>();
    for (const batch of all.batches) {
      const offsets = batch.messages.map((message) => Number(message.offset));
      expect(offsets).toEqual(offsets.map((_, index) => (next.get(batch.partition) ?? 0) + index));
      next.set(batch.partition, (offsets.at(-1) ?? 0) + 1);
      expect(batch.messages.every((message) => message.partition === batch.partition)).toBe(true);
    }
  });

  it('bounds a batch by bytes, but always gives at least one message', async () => {
    messaging = createInProcessMessaging({ maxBatchBytes: 10, log: () => undefined });
    const { producer } = await setUp({ t: 1 });
    await producer.send('t', [
      { key: null, value: '1234' },
      { key: null, value: '5678' },
      { key: null, value: 'a value longer than the limit' },
      { key: null, value: '9' },
    ]);
    const all = await reader('g', ['t']);
    await until(() => all.received().length === 4, 'four messages');
    expect(all.batches.map((batch) => batch.messages.map(text))).toEqual([
      ['1234', '5678'],
      ['a value longer than the limit'],
      ['9'],
    ]);
  });

  it('keeps at most retainPerPartition messages of a partition; a group behind them starts again', async () => {
    messaging = createInProcessMessaging({ retainPerPartition: 3, log: () => undefined });
    const { producer } = await setUp({ t: 1 });
    for (let index = 0; index < 2_500; index++) await producer.send('t', [{ key: null, value: `m${index}` }]);
    const fromStart = await reader('early', ['t']);
    await until(() => fromStart.received().length === 3, 'the retained messages');
    expect(fromStart.received().map((message) => [message.offset, text(message)])).toEqual([
      ['2497', 'm2497'],
      ['2498', 'm2498'],
      ['2499', 'm2499'],
    ]);
    const latest = await reader('late', ['t'], async () => undefined, false);
    await producer.send('t', [{ key: null, value: 'm2500' }]);
    await until(() => latest.received().length === 1, 'the new message');
    expect(latest.received()[0]?.offset).toBe('2500');
  });

  it('keeps a group’s offsets across its members, and forgets those of a deleted topic', async () => {
    const { producer, admin } = await setUp({ t: 1 });
    await producer.send('t', [{ key: null, value: 'one' }]);
    const first = await reader('g', ['t']);
    await until(() => first.received().length === 1, 'the first message');
    await first.consumer.close();
    await producer.send('t', [{ key: null, value: 'two' }]);
    const second = await reader('g', ['t']);
    await until(() => second.received().length === 1, 'the second message');
    expect(second.received().map(text)).toEqual(['two']);
    await second.consumer.close();

    await admin.deleteTopics(['t']);
    await admin.createTopics([{ name: 't', partitions: 1 }]);
    await producer.send('t', [{ key: null, value: 'anew' }]);
    const third = await reader('g', ['t']);
    await until(() => third.received().length === 1, 'the message of the new topic');
    expect(third.received().map((message) => [message.offset, text(message)])).toEqual([['0', 'anew']]);
  });

  it('hands each delivery its own copy of a message', async () => {
    const { producer } = await setUp({ t: 1 });
    const value = Buffer.from('original');
    const headers = { h: 'v' };
    const g1 = await reader('g1', ['t'], async (batch) => {
      batch.messages[0]?.value.fill(0);
    });
    const g2 = await reader('g2', ['t']);
    await producer.send('t', [{ key: null, value, headers }]);
    value.write('mutated!');
    headers.h = 'changed';
    await until(() => g1.received().length === 1 && g2.received().length === 1, 'both groups');
    expect(text(g2.received()[0] as IncomingMessage)).toBe('original');
    expect(g2.received()[0]?.headers).toEqual({ h: 'v' });
  });

  it('hands every message of every partition over, in order, at least once, whatever fails and whoever leaves', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            key: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'),
            size: fc.integer({ min: 1, max: 5 }),
          }),
          {
            minLength: 1,
            maxLength: 12,
          },
        ),
        fc.array(fc.nat(3), { minLength: 1, maxLength: 10 }),
        fc.integer({ min: 1, max: 3 }),
        async (sends, failureCounts, members) => {
          const bus = createInProcessMessaging({ retryBackoffMs: 1, log: () => undefined });
          const admin = await bus.createAdmin();
          await admin.createTopics([{ name: 't', partitions: 3 }]);
          const producer = await bus.createProducer();
          // A batch fails as many times as its first message says, then succeeds.
          const attempts = new Map<string, number>();
          const handled: IncomingMessage[] = [];
          const consumers = [];
          for (let index = 0; index < members; index++) {
            const consumer = await bus.createConsumer({ groupId: 'g', topics: ['t'], fromBeginning: true });
            await consumer.start(async (batch) => {
              await sleep(0);
              const first = batch.messages[0] as IncomingMessage;
              const id = `${first.offset}@${first.partition}`;
              const attempt = attempts.get(id) ?? 0;
              attempts.set(id, attempt + 1);
              if (
                attempt <
                (failureCounts[(Number(first.offset) * 3 + first.partition) % failureCounts.length] ?? 0)
              )
                throw new Error('random failure');
              handled.push(...batch.messages);
            });
            consumers.push(consumer);
          }
          let total = 0;
          for (const [index, send] of sends.entries()) {
            const messages = Array.from({ length: send.size }, (_, seq) => ({
              key: send.key,
              value: `${index}.${seq}`,
            }));
            total += messages.length;
            await producer.send('t', messages);
            // A member leaves in the middle: its partitions move on, from what was committed.
            if (index === Math.floor(sends.length / 2) && consumers.length > 1)
              await consumers.pop()?.close();
          }
          await until(
            () => new Set(handled.map((message) => `${message.offset}@${message.partition}`)).size === total,
            `${total} messages`,
          );
          for (let partition = 0; partition < 3; partition++) {
            const offsets = handled
              .filter((message) => message.partition === partition)
              .map((message) => Number(message.offset));
            // In order: each message handled comes right after one handled before it (or is the first).
            for (let index = 0; index < offsets.length; index++)
              expect(offsets.slice(0, index).concat(-1)).toContain((offsets[index] ?? 0) - 1);
            const values = handled.filter((message) => message.partition === partition).map(text);
            expect(new Set(values).size).toBe(new Set(offsets).size);
          }
          await Promise.all(consumers.map((consumer) => consumer.close()));
          await producer.close();
          await admin.close();
        },
      ),
      { numRuns: 40 },
    );
  });

  it('compacts a topic created with cleanup.policy=compact: the latest message of each key, tombstones kept', async () => {
    const bus = createInProcessMessaging({ log: () => undefined });
    const admin = await bus.createAdmin();
    await admin.createTopics([{ name: 'latest', partitions: 1, config: { 'cleanup.policy': 'compact' } }]);
    const producer = await bus.createProducer();
    await producer.send('latest', [
      { key: 'a', value: 'a1' },
      { key: 'b', value: 'b1' },
      { key: 'a', value: 'a2' },
      { key: 'b', value: null },
      { key: 'c', value: 'c1' },
    ]);
    expect(bus.log.ranges('latest')).toEqual([{ start: 0, end: 5 }]);
    expect(
      bus.log
        .read('latest', 0, 0, 10)
        .map(({ offset, key, value }) => [offset, key, value?.toString() ?? null]),
    ).toEqual([
      [2, 'a', 'a2'],
      [3, 'b', null],
      [4, 'c', 'c1'],
    ]);
    expect(bus.log.read('latest', 0, 3, 1).map(({ offset }) => offset)).toEqual([3]);
    expect(bus.log.ranges('nothing')).toBeNull();

    const consumer = await bus.createConsumer({ groupId: 'g', topics: ['latest'], fromBeginning: true });
    const received: IncomingMessage[] = [];
    await consumer.start(async (batch) => void received.push(...batch.messages));
    await until(() => received.length === 3, 'the compacted log');
    expect(received.map((message) => [message.offset, text(message), message.tombstone ?? false])).toEqual([
      ['2', 'a2', false],
      ['3', '', true],
      ['4', 'c1', false],
    ]);
    // Committed past the end: a gap-only stretch leaves no lag.
    await producer.send('latest', [{ key: 'c', value: 'c2' }]);
    await until(() => received.length === 4, 'the next message');
    expect((await admin.consumerLag('g')).map(({ lag }) => lag)).toEqual([0]);
    const appended: string[] = [];
    const unsubscribe = bus.log.onAppend((topic) => appended.push(topic));
    await producer.send('latest', [{ key: 'd', value: 'd1' }]);
    unsubscribe();
    await producer.send('latest', [{ key: 'd', value: 'd2' }]);
    expect(appended).toEqual(['latest']);
    await consumer.close();
    await producer.close();
    await admin.close();
  });
});
