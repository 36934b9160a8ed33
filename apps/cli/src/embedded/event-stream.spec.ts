import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createParser } from 'eventsource-parser';
import express from 'express';
import fc from 'fast-check';
import pino from 'pino';
import { Registry } from 'prom-client';
import type { InProcessMessaging, MessageProducer, MessagingAdmin } from '@policygen/messaging';
import { createInProcessMessaging } from '@policygen/messaging';
import { eventStreamRouter, formatCursor, parseCursor } from './event-stream';

interface StreamEvent {
  readonly event: string | undefined;
  readonly id: string | undefined;
  readonly data: string;
}

/** Reads a stream's events as they come until `stop` says enough, then disconnects. */
async function readStream(
  url: string,
  stop: (events: readonly StreamEvent[]) => boolean,
  headers: Record<string, string> = {},
): Promise<StreamEvent[]> {
  const events: StreamEvent[] = [];
  const abort = new AbortController();
  const response = await fetch(url, { headers: { ...EDITOR, ...headers }, signal: abort.signal });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const parser = createParser({
    onEvent: (event) => events.push({ event: event.event, id: event.id, data: event.data }),
  });
  const decoder = new TextDecoder();
  try {
    for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
      parser.feed(decoder.decode(chunk, { stream: true }));
      if (stop(events)) break;
    }
  } finally {
    abort.abort();
  }
  return events;
}

const messagesOf = (events: readonly StreamEvent[]) =>
  events
    .filter((event) => event.event === 'message')
    .map(
      (event) =>
        JSON.parse(event.data) as {
          partition: number;
          offset: string;
          key: string | null;
          value: string | null;
        },
    );

const EDITOR = { authorization: 'Bearer editor-token' };

describe('the event stream of policygen start', () => {
  let bus: InProcessMessaging;
  let admin: MessagingAdmin;
  let producer: MessageProducer;
  let server: Server;
  let base: string;
  let registry: Registry;

  beforeEach(async () => {
    bus = createInProcessMessaging({ log: () => undefined });
    admin = await bus.createAdmin();
    producer = await bus.createProducer();
    await admin.createTopics([
      { name: 'results', partitions: 3 },
      { name: 'latest', partitions: 2, config: { 'cleanup.policy': 'compact' } },
    ]);
    registry = new Registry();
    const app = express();
    app.use(
      '/events',
      eventStreamRouter({
        log: bus.log,
        producer,
        admin,
        logger: pino({ level: 'silent' }),
        registry,
        keepAliveMs: 50,
        authenticator: {
          authenticate: (token) =>
            token === 'editor-token' || token === 'reader-token'
              ? {
                  kind: 'api',
                  name: token,
                  role: token === 'editor-token' ? 'editor' : 'reader',
                  tokenId: token,
                }
              : null,
        },
      }),
    );
    server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/events`;
  });
  afterEach(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await producer.close();
    await admin.close();
  });

  const send = (topic: string, count: number, from = 0) =>
    producer.send(
      topic,
      Array.from({ length: count }, (_, index) => ({
        key: `node-${(from + index) % 5}`,
        value: `{"n":${from + index}}`,
      })),
    );

  it('sends what the topic holds in order per partition, says when it caught up, then follows live', async () => {
    await send('results', 20);
    let liveSent = false;
    const events = await readStream(`${base}/results`, (seen) => {
      if (!liveSent && seen.some((event) => event.event === 'caught-up')) {
        liveSent = true;
        void send('results', 5, 20);
      }
      return messagesOf(seen).length >= 25;
    });
    const caughtUp = events.findIndex((event) => event.event === 'caught-up');
    expect(caughtUp).toBe(20);
    expect(JSON.parse(events[caughtUp]?.data ?? '{}')).toEqual({ positions: expect.any(Object) });
    const messages = messagesOf(events);
    expect(
      messages.map((message) => JSON.parse(message.value ?? '').n).sort((a: number, b: number) => a - b),
    ).toEqual(Array.from({ length: 25 }, (_, index) => index));
    for (const partition of [0, 1, 2]) {
      const offsets = messages
        .filter((message) => message.partition === partition)
        .map((message) => Number(message.offset));
      expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
    }
    // Each id is the whole position after its message.
    const last = events.filter((event) => event.event === 'message').at(-1);
    expect(parseCursor(last?.id ?? '')).toEqual(
      new Map((bus.log.ranges('results') ?? []).map(({ end }, partition) => [partition, end])),
    );
  });

  it('resumes after Last-Event-ID with exactly what came after it, or starts at the end when asked', async () => {
    await send('results', 12);
    const first = await readStream(`${base}/results`, (seen) => messagesOf(seen).length >= 7);
    const resumeFrom = first.filter((event) => event.event === 'message')[6]?.id ?? '';
    await send('results', 4, 12);
    const rest = await readStream(
      `${base}/results`,
      (seen) => seen.some((event) => event.event === 'caught-up'),
      {
        'last-event-id': resumeFrom,
      },
    );
    const seenBefore = messagesOf(first).slice(0, 7);
    const all = [...seenBefore, ...messagesOf(rest)].map(
      (message) => JSON.parse(message.value ?? '').n as number,
    );
    expect(all.sort((a, b) => a - b)).toEqual(Array.from({ length: 16 }, (_, index) => index));

    const fromEnd = await readStream(`${base}/results?from=end`, (seen) => {
      if (seen.some((event) => event.event === 'caught-up') && messagesOf(seen).length === 0)
        void send('results', 1, 100);
      return messagesOf(seen).length >= 1;
    });
    expect(messagesOf(fromEnd).map((message) => message.value)).toEqual(['{"n":100}']);
  });

  it('gives a compacted topic its latest record per key, tombstones as null values', async () => {
    await producer.send('latest', [
      { key: 'a', value: 'a1' },
      { key: 'b', value: 'b1' },
      { key: 'a', value: 'a2' },
      { key: 'b', value: null },
    ]);
    const events = await readStream(`${base}/latest`, (seen) =>
      seen.some((event) => event.event === 'caught-up'),
    );
    expect(
      messagesOf(events)
        .map((message) => [message.key, message.value])
        .sort(),
    ).toEqual([
      ['a', 'a2'],
      ['b', null],
    ]);
  });

  it("puts a consumer's dead letter into <topic>.dlq in the one dead-letter format", async () => {
    const response = await fetch(`${base}/results/dead-letters`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...EDITOR },
      body: JSON.stringify({
        partition: 1,
        offset: '7',
        key: 'n1',
        value: 'nope',
        headers: { trace: 't' },
        reason: '$.nodeId: required',
        attempts: 5,
        failedAt: '2026-11-26T10:00:00.000Z',
        groupId: 'audit',
      }),
    });
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ topic: 'results.dlq' });
    const [letter] = bus.log.read('results.dlq', 0, 0, 10);
    expect(letter?.value?.toString()).toBe('nope');
    expect(letter?.headers).toEqual({
      trace: 't',
      'policygen-error': '$.nodeId: required',
      'policygen-origin': 'results/1/7',
      'policygen-attempts': '5',
      'policygen-failed-at': '2026-11-26T10:00:00.000Z',
      'policygen-consumer-group': 'audit',
    });
  });

  it('answers 404 for a topic that is not there, 400 naming what is wrong, and forgets a client that left', async () => {
    expect((await fetch(`${base}/nothing`, { headers: EDITOR })).status).toBe(404);
    const badCursor = await fetch(`${base}/results`, {
      headers: { 'last-event-id': 'yesterday', ...EDITOR },
    });
    expect(badCursor.status).toBe(400);
    expect(((await badCursor.json()) as { message: string }).message).toContain('Last-Event-ID');
    const badLetter = await fetch(`${base}/results/dead-letters`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...EDITOR },
      body: JSON.stringify({ partition: -1, offset: 'x', key: null, value: null, headers: {}, reason: '' }),
    });
    expect(badLetter.status).toBe(400);
    expect(
      ((await badLetter.json()) as { errors: { path: string }[] }).errors.map((error) => error.path).sort(),
    ).toEqual(['$.offset', '$.partition', '$.reason']);
    expect((await fetch(`${base}/nothing/dead-letters`, { method: 'POST', headers: EDITOR })).status).toBe(
      404,
    );

    await readStream(`${base}/results`, (seen) => seen.some((event) => event.event === 'caught-up'));
    const clients = async () =>
      (await registry.getSingleMetric('policygen_event_stream_clients')?.get())?.values.find(
        (value) => value.labels['topic'] === 'results',
      )?.value;
    for (let tries = 0; tries < 100 && (await clients()) !== 0; tries++)
      await new Promise((resolve) => setTimeout(resolve, 10));
    expect(await clients()).toBe(0);
  });

  it('asks for an API token: 401 without one or with an unknown one, 403 for a reader sending dead letters', async () => {
    await send('results', 1);
    const anonymous = await fetch(`${base}/results`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect((await fetch(`${base}/results`, { headers: { authorization: 'Bearer guessed' } })).status).toBe(
      401,
    );
    const letter = await fetch(`${base}/results/dead-letters`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer reader-token' },
      body: JSON.stringify({ partition: 0, offset: '0', key: null, value: null, headers: {}, reason: 'r' }),
    });
    expect(letter.status).toBe(403);
  });
});

describe('stream positions', () => {
  it('read back what they wrote', () => {
    fc.assert(
      fc.property(fc.array(fc.nat({ max: 2 ** 40 }), { maxLength: 20 }), (positions) => {
        expect([...(parseCursor(formatCursor(positions)) ?? new Map()).values()]).toEqual(positions);
      }),
    );
  });

  it('refuse what is not one', () => {
    expect(parseCursor('0:1,1')).toBeNull();
    expect(parseCursor('a:b')).toBeNull();
    expect(parseCursor('')).toEqual(new Map());
  });
});
