/// <reference types="jest" />
import { randomUUID } from 'node:crypto';
import type {
  IncomingMessage,
  MessageBatch,
  MessageConsumer,
  MessageProducer,
  Messaging,
  MessagingAdmin,
  PartitionAssignment,
} from './messaging';
import { MessageTooLargeError } from './messaging';
import { partitionForKey } from './partitioning/partition-for-key';
import { pino } from 'pino';
import { DeadLetterArchive } from './dead-letter-archive';
import { DeadLetters } from './dead-letters';
import { DeliveryMonitor } from './failures/delivery-monitor';
import { createRetryingConsumer } from './failures/retrying-consumer';
import { TransientFailure } from './failures/transient-failure';

/**
 * What every messaging adapter does, as jest tests: run by each adapter's spec (Kafka against a
 * real broker, the in-process bus) so that they provably behave alike. Test-only: not exported by
 * the library. Waits are generous, for a broker's group joins and rebalances (seconds each).
 */

const MESSAGES = 1_000;
const KEYS = 37;
const PARTITIONS = 3;
const WAIT_MS = 60_000;

interface Received {
  readonly member: string;
  readonly message: IncomingMessage;
  readonly key: string;
  readonly seq: number;
}

/** Polls `condition` until it holds; fails, saying what was awaited, after `timeoutMs`. */
async function waitFor(condition: () => boolean, what: string, timeoutMs = WAIT_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(20);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function text(message: IncomingMessage): string {
  return message.value.toString('utf8');
}

export function describeMessagingContract(name: string, newMessaging: () => Messaging): void {
  describe(name, () => {
    let messaging: Messaging;
    const topic = `it.messaging.${randomUUID()}`;
    const topics: string[] = [];
    let admin: MessagingAdmin;
    let producer: MessageProducer;
    const consumers: MessageConsumer[] = [];

    /** A consumer of its own group (unless one is named) that records what it is given and told. */
    async function member(
      topicName: string,
      options: {
        groupId?: string;
        fromBeginning?: boolean;
        handler?: (batch: MessageBatch) => Promise<void>;
      } = {},
    ) {
      const consumer = await messaging.createConsumer({
        groupId: options.groupId ?? `it-group-${randomUUID()}`,
        topics: [topicName],
        fromBeginning: options.fromBeginning ?? true,
      });
      consumers.push(consumer);
      const received: IncomingMessage[] = [];
      const assignments: PartitionAssignment[] = [];
      consumer.onAssignment((assignment) => assignments.push(assignment));
      await consumer.start(async (batch) => {
        await options.handler?.(batch);
        received.push(...batch.messages);
      });
      const partitions = (): readonly number[] => assignments[assignments.length - 1]?.[topicName] ?? [];
      return { consumer, received, assignments, partitions };
    }

    async function newTopic(partitions: number, config?: Record<string, string>): Promise<string> {
      const created = `it.messaging.${randomUUID()}`;
      await admin.createTopics([{ name: created, partitions, ...(config ? { config } : {}) }]);
      topics.push(created);
      return created;
    }

    beforeAll(async () => {
      messaging = newMessaging();
      admin = await messaging.createAdmin();
      producer = await messaging.createProducer({ idempotent: true });
    });

    afterAll(async () => {
      await Promise.all(consumers.map((consumer) => consumer.close()));
      await producer.close();
      await admin.deleteTopics([topic, ...topics]);
      await admin.close();
    });

    it('creates a topic with 3 partitions, idempotently', async () => {
      await admin.createTopics([{ name: topic, partitions: PARTITIONS }]);
      await admin.createTopics([{ name: topic, partitions: PARTITIONS }]);
      expect(await admin.listTopics()).toContain(topic);
      expect(await admin.partitionCount(topic)).toBe(PARTITIONS);
    });

    it("reports a group's members, its partitions and its lag per partition", async () => {
      const watched = await newTopic(2);
      const groupId = `it-group-${randomUUID()}`;
      const send = (count: number, from: number) =>
        producer.send(
          watched,
          Array.from({ length: count }, (_, index) => ({
            key: `k${from + index}`,
            value: `m${from + index}`,
          })),
        );
      await send(4, 0);
      const reader = await member(watched, { groupId });
      await waitFor(() => reader.received.length === 4 && reader.partitions().length === 2, 'the 4 messages');
      const members = await admin.groupMembers(groupId);
      expect(members).toHaveLength(1);
      expect([...(members[0]?.assignment[watched] ?? [])].sort()).toEqual([0, 1]);
      expect(await admin.listGroups()).toContain(groupId);
      let lag = await admin.consumerLag(groupId);
      for (let tries = 0; lag.some((partition) => partition.lag > 0) && tries < 100; tries++) {
        await sleep(100);
        lag = await admin.consumerLag(groupId);
      }
      expect(
        lag
          .filter((partition) => partition.topic === watched)
          .map(({ partition, lag: behind }) => [partition, behind]),
      ).toEqual([
        [0, 0],
        [1, 0],
      ]);
      await reader.consumer.close();
      await send(3, 4);
      const behind = (await admin.consumerLag(groupId)).filter((partition) => partition.topic === watched);
      expect(behind.reduce((sum, partition) => sum + partition.lag, 0)).toBe(3);
      expect(behind.reduce((sum, partition) => sum + partition.end, 0)).toBe(7);
      expect(await admin.groupMembers(groupId)).toEqual([]);
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
      await waitFor(() => {
        const a = partitionsOf('member-a');
        const b = partitionsOf('member-b');
        return (
          a.length > 0 &&
          b.length > 0 &&
          new Set([...a, ...b]).size === PARTITIONS &&
          a.length + b.length === PARTITIONS
        );
      }, 'both group members to be assigned partitions');

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

      await waitFor(() => received.length >= MESSAGES, `${MESSAGES} messages`);
      // Anything delivered twice would arrive right behind the originals; give it the chance to.
      await sleep(1_000);

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

    it('carries keys, values, headers, offsets and timestamps; a key lands in the partition partitionForKey names', async () => {
      const name = await newTopic(PARTITIONS);
      const reader = await member(name);
      await waitFor(() => reader.partitions().length === PARTITIONS, 'the partitions of a group of one');
      const before = Date.now();
      const keys = ['alpha', 'beta', 'gamma', 'delta'];
      await producer.send(
        name,
        keys.map((key, index) => ({
          key,
          value: `value of ${key}`,
          headers: { index: String(index), 'x-é': 'ü' },
        })),
      );
      await producer.send(name, [
        { key: null, value: Buffer.from([0, 1, 2, 255]) },
        { key: 'empty', value: '' },
      ]);
      await waitFor(() => reader.received.length >= keys.length + 2, 'six messages');
      const after = Date.now();

      for (const [index, key] of keys.entries()) {
        const message = reader.received.find((each) => each.key === key);
        expect(message).toMatchObject({
          topic: name,
          partition: partitionForKey(key, PARTITIONS),
          headers: { index: String(index), 'x-é': 'ü' },
        });
        expect(message && text(message)).toBe(`value of ${key}`);
      }
      const unkeyed = reader.received.find((message) => message.key === null);
      expect(unkeyed?.value).toEqual(Buffer.from([0, 1, 2, 255]));
      expect(unkeyed?.headers).toEqual({});
      const empty = reader.received.find((message) => message.key === 'empty');
      expect(Buffer.isBuffer(empty?.value)).toBe(true);
      expect(empty?.value.length).toBe(0);

      for (const message of reader.received) {
        expect(message.offset).toMatch(/^(0|[1-9][0-9]*)$/);
        expect(message.timestamp).toBeGreaterThanOrEqual(before - 1_000);
        expect(message.timestamp).toBeLessThanOrEqual(after + 1_000);
      }
      // A new topic's partitions count from offset 0, one by one.
      for (let partition = 0; partition < PARTITIONS; partition++) {
        const offsets = reader.received
          .filter((message) => message.partition === partition)
          .map((message) => Number(message.offset));
        expect(offsets).toEqual(offsets.map((_, index) => index));
      }
    });

    it('gives a batch whose handler threw to it again, and a group resumes after what it handled', async () => {
      const name = await newTopic(1);
      const groupId = `it-group-${randomUUID()}`;
      const attempts: { readonly offsets: string[]; readonly failed: boolean }[] = [];
      let failures = 0;
      const first = await member(name, {
        groupId,
        handler: async (batch) => {
          const offsets = batch.messages.map((message) => message.offset);
          const failed = offsets.includes('2') && failures++ === 0;
          attempts.push({ offsets, failed });
          if (failed) throw new Error('a handler that fails once');
        },
      });
      await waitFor(() => first.partitions().length === 1, 'the partition of a group of one');
      await producer.send(
        name,
        Array.from({ length: 5 }, (_, index) => ({ key: 'k', value: `m${index}` })),
      );
      await waitFor(() => first.received.length >= 5, 'five messages, one of them given twice');

      expect(failures).toBeGreaterThanOrEqual(1);
      const failedAt = attempts.findIndex((attempt) => attempt.failed);
      const failed = attempts[failedAt];
      const retried = attempts[failedAt + 1];
      // The same batch again: from the same offset, with every message of the one that failed.
      expect(retried?.offsets[0]).toBe(failed?.offsets[0]);
      expect(retried?.offsets).toEqual(expect.arrayContaining(failed?.offsets ?? []));
      const handled = attempts.filter((attempt) => !attempt.failed).flatMap((attempt) => attempt.offsets);
      expect(handled).toEqual(['0', '1', '2', '3', '4']);
      expect(first.received.map(text)).toEqual(['m0', 'm1', 'm2', 'm3', 'm4']);

      await first.consumer.close();
      await producer.send(name, [{ key: 'k', value: 'm5' }]);
      const next = await member(name, { groupId });
      await waitFor(() => next.received.length >= 1, 'the message after those handled');
      await sleep(500);
      expect(next.received.map((message) => [message.offset, text(message)])).toEqual([['5', 'm5']]);
    });

    it('sends more than the topic takes in one batch, in order; refuses a message over its limit, sending nothing', async () => {
      const limit = 64 * 1024;
      const name = await newTopic(2, { 'max.message.bytes': String(limit) });
      const reader = await member(name);
      await waitFor(() => reader.partitions().length === 2, 'the partitions of a group of one');
      // 400 KB in one send: several times what one record batch of this topic may hold.
      const filler = 'x'.repeat(2_000);
      const many = Array.from({ length: 200 }, (_, seq) => ({
        key: `k${seq % 3}`,
        value: JSON.stringify({ seq, filler }),
      }));
      await producer.send(name, many);
      await waitFor(() => reader.received.length === many.length, 'every message of the large send');
      for (const key of ['k0', 'k1', 'k2']) {
        const seqs = reader.received
          .filter((message) => message.key === key)
          .map((message) => (JSON.parse(text(message)) as { seq: number }).seq);
        expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
      }

      const oversized = [
        { key: 'small-1', value: 'fits' },
        { key: 'huge', value: 'y'.repeat(limit + 1) },
        { key: 'small-2', value: 'fits' },
      ];
      const refusal = producer.send(name, oversized);
      await expect(refusal).rejects.toBeInstanceOf(MessageTooLargeError);
      await expect(refusal).rejects.toMatchObject({ keys: ['huge'], limitBytes: limit, retriable: false });
      await producer.send(name, [{ key: 'k0', value: JSON.stringify({ seq: 'after' }) }]);
      await waitFor(() => reader.received.length === many.length + 1, 'the message sent after the refusal');
      expect(reader.received.map((message) => message.key)).not.toContain('small-1');
    });

    it('sends several topics in one call, each in order; refuses it whole when one message is over its limit', async () => {
      const limit = 64 * 1024;
      const first = await newTopic(2);
      const second = await newTopic(1, { 'max.message.bytes': String(limit) });
      const readers = [await member(first), await member(second)];
      await waitFor(
        () => readers[0]?.partitions().length === 2 && readers[1]?.partitions().length === 1,
        'the partitions of both topics',
      );
      const numbered = (prefix: string, count: number) =>
        Array.from({ length: count }, (_, seq) => ({ key: `k${seq % 3}`, value: `${prefix}${seq}` }));
      // The second topic's part is larger than one of its batches: sent in several requests, still in order.
      const large = Array.from({ length: 60 }, (_, seq) => ({
        key: 'big',
        value: `${seq} ${'z'.repeat(2_000)}`,
      }));
      await producer.sendAll([
        { topic: first, messages: numbered('a', 30) },
        { topic: second, messages: [] },
      ]);
      await producer.sendAll([
        { topic: first, messages: numbered('b', 30) },
        { topic: second, messages: large },
      ]);
      await waitFor(
        () => readers[0]?.received.length === 60 && readers[1]?.received.length === large.length,
        "both topics' messages",
      );
      for (const key of ['k0', 'k1', 'k2'])
        expect(
          readers[0]?.received.filter((message) => message.key === key).map((message) => text(message)),
        ).toEqual(
          [...numbered('a', 30), ...numbered('b', 30)].filter((m) => m.key === key).map((m) => m.value),
        );
      expect(readers[1]?.received.map((message) => Number(text(message).split(' ')[0]))).toEqual(
        large.map((_, seq) => seq),
      );

      const refusal = producer.sendAll([
        { topic: first, messages: [{ key: 'k0', value: 'never' }] },
        { topic: second, messages: [{ key: 'huge', value: 'y'.repeat(limit + 1) }] },
      ]);
      await expect(refusal).rejects.toBeInstanceOf(MessageTooLargeError);
      await expect(refusal).rejects.toMatchObject({ keys: ['huge'], topic: second });
      await producer.sendAll([{ topic: first, messages: [{ key: 'k0', value: 'after' }] }]);
      await waitFor(() => readers[0]?.received.length === 61, 'the message sent after the refusal');
      expect(readers[0]?.received.map((message) => text(message))).not.toContain('never');
    });

    it('starts a new group at the end of the log unless it reads from the beginning', async () => {
      const name = await newTopic(1);
      await producer.send(name, [{ key: 'k', value: 'old' }]);
      const latest = await member(name, { fromBeginning: false });
      const earliest = await member(name, { fromBeginning: true });
      await waitFor(
        () => latest.partitions().length === 1 && earliest.partitions().length === 1,
        'both groups to be assigned their partition',
      );
      // A broker may settle where a group starts a little after the join: send until one arrives.
      for (let index = 0; latest.received.length === 0; index++) {
        if (index > WAIT_MS / 200) throw new Error('nothing new reached the group that reads new messages');
        await producer.send(name, [{ key: 'k', value: `new ${index}` }]);
        await sleep(200);
      }
      await waitFor(() => earliest.received.length >= 2, 'the old message and a new one');
      expect(latest.received.map(text)).not.toContain('old');
      expect(text(earliest.received[0] as IncomingMessage)).toBe('old');
    });

    it('a consumer that gathers (gatherMs) still gets every message once, in order', async () => {
      const name = await newTopic(1);
      const consumer = await messaging.createConsumer({
        groupId: `it-group-${randomUUID()}`,
        topics: [name],
        fromBeginning: true,
        gatherMs: 300,
      });
      consumers.push(consumer);
      const received: IncomingMessage[] = [];
      await consumer.start(async (batch) => {
        received.push(...batch.messages);
      });
      for (let index = 0; index < 10; index++) {
        await producer.send(name, [{ key: 'k', value: `m${index}` }]);
        await sleep(20);
      }
      await waitFor(() => received.length >= 10, 'the 10 messages');
      await sleep(500);
      expect(received.map(text)).toEqual(Array.from({ length: 10 }, (_, index) => `m${index}`));
    });

    it('rebalances when a member leaves: the one left is told it has every partition, and reads on', async () => {
      const name = await newTopic(PARTITIONS);
      const groupId = `it-group-${randomUUID()}`;
      const a = await member(name, { groupId });
      const b = await member(name, { groupId });
      // Told one after the other: the first member may still hold every partition for a moment.
      await waitFor(
        () =>
          a.partitions().length > 0 &&
          b.partitions().length > 0 &&
          a.partitions().length + b.partitions().length === PARTITIONS,
        'both members to be assigned partitions',
      );
      expect([...a.partitions(), ...b.partitions()].sort()).toEqual([0, 1, 2]);
      const batch = (from: number) =>
        Array.from({ length: 30 }, (_, index) => ({ key: `key-${index}`, value: `m${from + index}` }));
      await producer.send(name, batch(0));
      await waitFor(() => a.received.length + b.received.length >= 30, 'the first 30 messages');

      const toldA = a.assignments.length;
      await b.consumer.close();
      await waitFor(
        () => a.assignments.length > toldA && a.partitions().length === PARTITIONS,
        'the member left to be given every partition',
      );
      await producer.send(name, batch(30));
      await waitFor(() => a.received.length + b.received.length >= 60, 'all 60 messages');
      await sleep(500);
      const all = [...a.received, ...b.received].map(text);
      expect(all).toHaveLength(60);
      expect(new Set(all).size).toBe(60);
      expect(a.received.map(text)).toEqual(expect.arrayContaining(batch(30).map((message) => message.value)));
    });

    it("reads a partition outside any group: from an offset, at most so many, and tells the partition's range", async () => {
      const name = await newTopic(2);
      await producer.send(
        name,
        Array.from({ length: 7 }, (_, index) => ({
          key: 'one-key',
          value: `m${index}`,
          headers: { n: String(index) },
        })),
      );
      const partition = partitionForKey('one-key', 2);
      const ranges = await admin.partitionOffsets(name);
      expect(ranges).toEqual([
        { partition: 0, start: 0, end: partition === 0 ? 7 : 0 },
        { partition: 1, start: 0, end: partition === 1 ? 7 : 0 },
      ]);
      const read = await admin.readMessages(name, partition, 2, 3);
      expect(read.map((message) => [message.offset, text(message), message.headers['n']])).toEqual([
        ['2', 'm2', '2'],
        ['3', 'm3', '3'],
        ['4', 'm4', '4'],
      ]);
      expect(read[0]).toMatchObject({ topic: name, partition, key: 'one-key' });
      expect(await admin.readMessages(name, partition, 7, 10)).toEqual([]);
      expect(await admin.readMessages(name, 1 - partition, 0, 10)).toEqual([]);
      // A read is no consumer group of anyone's: none is left behind.
      expect((await admin.listGroups()).filter((group) => group.startsWith('policygen-read.'))).toEqual([]);
    });

    describe('a consumer whose transport owns failure', () => {
      const silent = pino({ level: 'silent' });
      const retry = { attempts: 3, initialDelayMs: 20, maxDelayMs: 200 };

      async function retrying(
        topicName: string,
        handler: (batch: MessageBatch) => Promise<void>,
        monitor?: DeliveryMonitor,
      ) {
        const groupId = `it-group-${randomUUID()}`;
        const consumer = await createRetryingConsumer(messaging, {
          groupId,
          topics: [topicName],
          fromBeginning: true,
          deadLetters: new DeadLetters(producer, silent),
          retry,
          ...(monitor ? { monitor } : {}),
        });
        consumers.push(consumer);
        const received: IncomingMessage[] = [];
        const assignments: PartitionAssignment[] = [];
        consumer.onAssignment((assignment) => assignments.push(assignment));
        await consumer.start(async (batch) => {
          await handler(batch);
          received.push(...batch.messages);
        });
        await waitFor(
          () => (assignments[assignments.length - 1]?.[topicName] ?? []).length > 0,
          'the partition',
        );
        return { groupId, received };
      }

      it('dead-letters a poison message within its budget, with its error and every original header; delivers the rest in order; replays it', async () => {
        const name = await newTopic(1);
        topics.push(`${name}.dlq`);
        let accept = false;
        const reader = await retrying(name, async (batch) => {
          if (!accept && batch.messages.some((message) => text(message) === 'poison'))
            throw new Error('cannot take poison');
        });
        const values = ['m0', 'm1', 'poison', 'm3', 'm4'];
        await producer.send(
          name,
          values.map((value, index) => ({ key: 'k', value, headers: { trace: `t${index}`, 'x-é': 'ü' } })),
        );
        await waitFor(() => reader.received.length >= 4, 'the four good messages');
        const archive = new DeadLetterArchive(admin, producer);
        const dlq = `${name}.dlq`;
        for (let tries = 0; ; tries++) {
          await archive.refresh(dlq);
          if (archive.depth(dlq) > 0 || tries > 100) break;
          await sleep(100);
        }
        expect(reader.received.map(text)).toEqual(['m0', 'm1', 'm3', 'm4']);
        const page = archive.list(dlq, { limit: 10 });
        expect(page).toMatchObject({ topic: dlq, depth: 1, total: 1, next: null });
        const [letter] = page.items;
        expect(letter).toMatchObject({
          origin: { topic: name, partition: 0, offset: '2' },
          key: 'k',
          group: reader.groupId,
          headers: { trace: 't2', 'x-é': 'ü' },
          size: 6,
          value: { encoding: 'utf8', data: 'poison', truncated: false },
          replayed: null,
        });
        expect(letter?.error).toContain('cannot take poison');
        expect(letter?.attempts).toBeGreaterThanOrEqual(retry.attempts);
        expect(Date.parse(letter?.failedAt ?? '')).toBeGreaterThan(Date.now() - WAIT_MS);

        // The partition goes on after it.
        await producer.send(name, [{ key: 'k', value: 'm5' }]);
        await waitFor(() => reader.received.length >= 5, 'the message sent after the poison');

        accept = true;
        const outcome = await archive.replay(dlq, { by: 'contract' });
        expect(outcome.replayed).toEqual([{ offset: letter?.offset, to: name }]);
        await waitFor(() => reader.received.length >= 6, 'the replayed message');
        const replayed = reader.received[5] as IncomingMessage;
        expect(text(replayed)).toBe('poison');
        expect(replayed.key).toBe('k');
        expect(replayed.headers).toEqual({
          trace: 't2',
          'x-é': 'ü',
          'policygen-replayed-from': `${dlq}/0/${letter?.offset}`,
        });
        expect(archive.depth(dlq)).toBe(0);
        // Another archive (another instance) reads the marker: nothing is replayed twice.
        const other = new DeadLetterArchive(admin, producer);
        const again = await other.replay(dlq);
        expect(again.replayed).toEqual([]);
        expect(other.depth(dlq)).toBe(0);
        expect(other.list(dlq, { limit: 10 }).items[0]?.replayed).toMatchObject({ by: 'contract' });
        await sleep(300);
        expect(reader.received.map(text)).toEqual(['m0', 'm1', 'm3', 'm4', 'm5', 'poison']);
      });

      it('waits out a transient failure without dead-lettering anything, then delivers every message once, in order', async () => {
        const name = await newTopic(1);
        topics.push(`${name}.dlq`);
        const monitor = new DeliveryMonitor(silent);
        let failing = true;
        let failures = 0;
        const reader = await retrying(
          name,
          async () => {
            if (failing) {
              failures++;
              throw new TransientFailure('the cache is restarting');
            }
          },
          monitor,
        );
        await producer.send(
          name,
          Array.from({ length: 4 }, (_, index) => ({ key: 'k', value: `m${index}` })),
        );
        // Far more failures than the budget allows: none of them is the messages'.
        await waitFor(() => failures > retry.attempts * 3, 'the handler to fail transiently many times');
        expect(monitor.waitingPartitions()).toEqual([
          expect.objectContaining({
            topic: name,
            partition: 0,
            group: reader.groupId,
            reason: 'the cache is restarting',
          }),
        ]);
        failing = false;
        await waitFor(() => reader.received.length >= 4, 'the four messages');
        await sleep(300);
        expect(reader.received.map(text)).toEqual(['m0', 'm1', 'm2', 'm3']);
        expect(monitor.waitingPartitions()).toEqual([]);
        const archive = new DeadLetterArchive(admin, producer);
        await archive.refresh(`${name}.dlq`);
        expect(archive.list(`${name}.dlq`, { limit: 10 }).total).toBe(0);
      });
    });

    it('closes a consumer once the batch in flight is handled', async () => {
      const name = await newTopic(1);
      let started = false;
      let finished = false;
      const reader = await member(name, {
        handler: async () => {
          started = true;
          await sleep(500);
          finished = true;
        },
      });
      await waitFor(() => reader.partitions().length === 1, 'the partition of a group of one');
      await producer.send(name, [{ key: 'k', value: 'slow' }]);
      await waitFor(() => started, 'the handler to start');
      await reader.consumer.close();
      expect(finished).toBe(true);
    });
  });
}
