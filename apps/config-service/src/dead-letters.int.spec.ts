import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { topicsFor } from '@policygen/events';
import type {
  DeadLetterPage,
  IncomingMessage,
  MessageProducer,
  MessagingAdmin,
  ReplayOutcome,
} from '@policygen/messaging';
import { DeadLetters, partitionForKey } from '@policygen/messaging';
import type { ApiClient } from './testing/api-client';
import { configServiceForSuite, testMessaging } from './testing/running-config-service';

/** The dead-letter topics over the API: who may look and replay, what a letter says, what a replay does. */
describe('config service: dead letters', () => {
  const topics = topicsFor(`it-dlq-${randomUUID().slice(0, 8)}`);
  const origin = topics.nodeBundles;
  const dlq = `${origin}.dlq`;
  const suite = configServiceForSuite('cs_dead_letters', { topics });
  const messaging = testMessaging('dead-letters-it');
  let admin: MessagingAdmin;
  let producer: MessageProducer;
  let reader: ApiClient;
  let editor: ApiClient;

  function message(offset: string, value: string): IncomingMessage {
    return {
      topic: origin,
      partition: 3,
      offset,
      key: 'node-1',
      value: Buffer.from(value),
      headers: { 'content-type': 'application/json', trace: `t${offset}` },
      timestamp: Date.now(),
    };
  }

  async function depthMetric(): Promise<string | undefined> {
    const metrics = await suite.api.as(null).get('/metrics');
    return metrics.text.split('\n').find((line) => line.startsWith(`policygen_dlq_depth{topic="${dlq}"}`));
  }

  beforeAll(async () => {
    admin = await messaging.createAdmin();
    producer = await messaging.createProducer({ idempotent: true });
    await admin.createTopics([
      { name: origin, partitions: 4 },
      { name: dlq, partitions: 1 },
    ]);
    const letters = new DeadLetters(producer, pino({ level: 'silent' }));
    await letters.failed(
      message('41', '{"poison":true}'),
      {
        error: new Error('the distributor cannot take it'),
        attempts: 5,
        failedAt: new Date('2030-01-02T03:04:05Z'),
      },
      'policygen-distribution',
    );
    await letters.send(
      message('42', 'not json'),
      [{ path: '$', message: 'not JSON' }],
      'policygen-distribution',
    );
    const token = async (role: string) =>
      (await suite.api.post<{ token: string }>('/api/v1/api-tokens', { name: `dlq-${role}`, role })).body
        .token;
    reader = suite.api.as(await token('reader'));
    editor = suite.api.as(await token('editor'));
  });

  afterAll(async () => {
    await admin.deleteTopics([origin, dlq]).catch(() => undefined);
    await producer.close();
    await admin.close();
  });

  it('answers 401 anonymously, and lists for a reader every dead-letter topic with its depth', async () => {
    expect((await suite.api.as(null).get('/api/v1/dead-letters')).status).toBe(401);
    expect((await suite.api.as(null).get(`/api/v1/dead-letters/${dlq}`)).status).toBe(401);
    const overview = await reader.get<{ topics: { topic: string; depth: number }[] }>('/api/v1/dead-letters');
    expect(overview.status).toBe(200);
    expect(overview.body.topics).toContainEqual({ topic: dlq, origin, depth: 2, total: 2 });
  });

  it('shows each letter: origin, key, error, attempts, when, group, own headers, value, by pages', async () => {
    const page = await reader.get<DeadLetterPage>(`/api/v1/dead-letters/${origin}?limit=1`);
    expect(page.status).toBe(200);
    expect(page.body).toMatchObject({ topic: dlq, depth: 2, total: 2, next: 0 });
    expect(page.body.items).toEqual([
      {
        topic: dlq,
        partition: 0,
        offset: 0,
        origin: { topic: origin, partition: 3, offset: '41' },
        key: 'node-1',
        error: 'the distributor cannot take it',
        attempts: 5,
        failedAt: '2030-01-02T03:04:05.000Z',
        group: 'policygen-distribution',
        headers: { 'content-type': 'application/json', trace: 't41' },
        size: 15,
        value: { encoding: 'utf8', data: '{"poison":true}', truncated: false },
        replayed: null,
      },
    ]);
    const next = await reader.get<DeadLetterPage>(`/api/v1/dead-letters/${dlq}?after=0`);
    expect(next.body.items.map((letter) => [letter.offset, letter.error, letter.attempts])).toEqual([
      [1, '$: not JSON', 1],
    ]);
    expect(next.body.next).toBeNull();
    expect(await depthMetric()).toBe(`policygen_dlq_depth{topic="${dlq}"} 2`);
  });

  it('answers 400 naming the parameter or field, 404 for a topic the deployment has not', async () => {
    const badLimit = await reader.get<{ message: string }>(`/api/v1/dead-letters/${dlq}?limit=lots`);
    expect(badLimit.status).toBe(400);
    expect(badLimit.body.message).toContain('limit');
    expect((await reader.get(`/api/v1/dead-letters/${dlq}?after=-1`)).status).toBe(400);
    expect((await reader.get('/api/v1/dead-letters/somebody.elses.topic')).status).toBe(404);
    const badBody = await editor.post<{ issues: { path: string }[] }>('/api/v1/dead-letters/replay', {
      topic: dlq,
      offsets: ['zero'],
    });
    expect(badBody.status).toBe(400);
    expect(badBody.body.issues.map((issue) => issue.path)).toEqual(['$.offsets[0]']);
    expect((await editor.post('/api/v1/dead-letters/replay', { topic: 'nope' })).status).toBe(404);
  });

  it('refuses a replay to a reader (403); replays for an editor, once, to the origin with key and headers', async () => {
    expect((await reader.post('/api/v1/dead-letters/replay', { topic: dlq })).status).toBe(403);
    const replay = await editor.post<ReplayOutcome>('/api/v1/dead-letters/replay', {
      topic: dlq,
      offsets: [0, 7],
    });
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual({
      topic: dlq,
      replayed: [{ offset: 0, to: origin }],
      skipped: [{ offset: 7, reason: 'no dead letter at this offset' }],
    });
    const [republished] = await admin.readMessages(origin, partitionForKey('node-1', 4), 0, 10);
    expect(republished?.key).toBe('node-1');
    expect(republished?.value.toString()).toBe('{"poison":true}');
    expect(republished?.headers).toEqual({
      'content-type': 'application/json',
      trace: 't41',
      'policygen-replayed-from': `${dlq}/0/0`,
    });

    const again = await editor.post<ReplayOutcome>('/api/v1/dead-letters/replay', {
      topic: dlq,
      offsets: [0],
    });
    expect(again.body).toEqual({
      topic: dlq,
      replayed: [],
      skipped: [{ offset: 0, reason: 'already replayed' }],
    });
    const page = await reader.get<DeadLetterPage>(`/api/v1/dead-letters/${dlq}`);
    expect(page.body.depth).toBe(1);
    expect(page.body.items[0]?.replayed).toMatchObject({ by: 'dlq-editor' });
    expect(Date.parse(page.body.items[0]?.replayed?.at ?? '')).toBeGreaterThan(Date.now() - 60_000);
    // Every other letter, by default.
    const rest = await editor.post<ReplayOutcome>('/api/v1/dead-letters/replay', { topic: dlq });
    expect(rest.body.replayed).toEqual([{ offset: 1, to: origin }]);
    expect((await reader.get<DeadLetterPage>(`/api/v1/dead-letters/${dlq}`)).body.depth).toBe(0);
    expect(await depthMetric()).toBe(`policygen_dlq_depth{topic="${dlq}"} 0`);
  });
});
