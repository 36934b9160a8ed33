import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { createClient } from 'redis';
import { RedisBundleCache } from '@policygen/cache';
import type { Fleet } from '@policygen/engine';
import { GenerationEngine, validateFleet } from '@policygen/engine';
import { topicsFor } from '@policygen/events';
import { buildDemoFleet } from '@policygen/fleets';
import type { MessageProducer, OutgoingMessage } from '@policygen/messaging';
import { createKafkaMessaging } from '@policygen/messaging';
import { eventually, getTestInfrastructure } from '@policygen/testing-infra';
import { BundlePublisher } from './bundle-publisher';
import { GenerationLoop } from './generation-loop';
import type { SnapshotSource } from '@policygen/store';

/**
 * The generation loop in-process, on the harness's real Redis and Kafka: what it does when its
 * outputs fail, when a consumer asks for a node again, and when the cache is flushed under it.
 * Its snapshot source is a fixed configuration (the config-service is not what is tested here).
 */

const infra = getTestInfrastructure();

function demoFleet(): Fleet {
  const validation = validateFleet(buildDemoFleet());
  if (!validation.ok) throw new Error('the demo fleet is invalid');
  return validation.fleet;
}

/** The real producer, whose sends fail while `failing` is above zero (one failure per send). */
class FlakyProducer implements MessageProducer {
  failing = 0;
  readonly sent: { topic: string; messages: readonly OutgoingMessage[] }[] = [];

  constructor(private readonly producer: MessageProducer) {}

  async send(topic: string, messages: readonly OutgoingMessage[]): Promise<void> {
    if (this.failing > 0) {
      this.failing--;
      throw new Error('broker unreachable (injected)');
    }
    await this.producer.send(topic, messages);
    this.sent.push({ topic, messages });
  }

  close(): Promise<void> {
    return this.producer.close();
  }
}

describe('GenerationLoop', () => {
  const fleet = demoFleet();
  const expected = new Map<string, string>();
  const id = randomBytes(5).toString('hex');
  const topics = topicsFor(`loop-${id}`);
  const prefix = `loop:${id}:`;
  let cache: RedisBundleCache;
  let producer: FlakyProducer;
  let loop: GenerationLoop;

  beforeAll(async () => {
    const reference = GenerationEngine.fromFleet(fleet, { revision: 4 });
    reference.regenerate();
    for (const [nodeId, result] of reference.allResults())
      if (result.status === 'ok' && result.hash) expected.set(nodeId, result.hash);

    const messaging = createKafkaMessaging({ brokers: infra.kafkaBrokers, log: () => undefined });
    const admin = await messaging.createAdmin();
    await admin.createTopics([
      { name: topics.nodeBundles, partitions: 2 },
      { name: topics.generationEvents, partitions: 2 },
    ]);
    await admin.close();
    producer = new FlakyProducer(await messaging.createProducer({ idempotent: true }));
    cache = await RedisBundleCache.connect({ url: infra.redisUrl, prefix });
    const snapshots: SnapshotSource = { latest: () => Promise.resolve({ revision: 4, fleet }) };
    loop = new GenerationLoop({
      snapshots,
      cache,
      publisher: new BundlePublisher(cache, producer, topics),
      logger: pino({ level: 'silent' }),
      sliceSize: 50,
      retryDelayMs: 50,
    });
    // The first three sends fail: the slices they carried must still be published.
    producer.failing = 3;
    loop.start();
    loop.enqueue({ kind: 'ownership', owns: () => true, description: 'every node' });
  });
  afterAll(async () => {
    await loop.stop();
    await producer.close();
    await cache.close();
    const client = createClient({ url: infra.redisUrl });
    await client.connect();
    const keys = await client.keys(`${prefix}*`);
    if (keys.length > 0) await client.del(keys);
    await client.close();
  });

  async function served(): Promise<Map<string, string>> {
    return new Map([...(await cache.nodeHashes())].map(([nodeId, entry]) => [nodeId, entry.hash]));
  }

  async function settled(): Promise<void> {
    await eventually(
      () => {
        const status = loop.status();
        return status.ready && status.pending === 0 && status.queued === 0 && status.lastCycle !== null;
      },
      { what: 'the loop to have nothing left to do', timeoutMs: 30_000 },
    );
  }

  function bundlesSentFor(nodeId: string): number {
    return producer.sent
      .filter((send) => send.topic === topics.nodeBundles)
      .flatMap((send) => send.messages)
      .filter((message) => message.key === nodeId).length;
  }

  it('publishes every node although its first sends failed', async () => {
    await eventually(async () => (await served()).size === expected.size, {
      what: `${expected.size} nodes served`,
      timeoutMs: 30_000,
    });
    await settled();
    expect(producer.failing).toBe(0);
    expect(await served()).toEqual(expected);
    for (const nodeId of expected.keys()) expect(bundlesSentFor(nodeId)).toBeGreaterThanOrEqual(1);
  });

  it('publishes a node again when a consumer asks for it, and only that node', async () => {
    const before = producer.sent.length;
    loop.enqueue({ kind: 'request', nodeId: 'web-par-001', revision: 4 });
    await eventually(() => producer.sent.length > before, { what: 'a send after the request' });
    await settled();
    const bundles = producer.sent
      .slice(before)
      .filter((send) => send.topic === topics.nodeBundles)
      .flatMap((send) => send.messages.map((message) => message.key));
    expect(bundles).toEqual(['web-par-001']);
  });

  it('publishes every node again after the cache was flushed', async () => {
    const client = createClient({ url: infra.redisUrl });
    await client.connect();
    await client.del(await client.keys(`${prefix}*`));
    await client.close();
    expect((await served()).size).toBe(0);
    const before = producer.sent.length;
    // Any work wakes the loop; the flush is noticed at the start of its next cycle.
    loop.enqueue({ kind: 'request', nodeId: 'web-par-002', revision: 4 });
    await eventually(async () => (await served()).size === expected.size, {
      what: 'every node served again',
      timeoutMs: 30_000,
    });
    await settled();
    expect(await served()).toEqual(expected);
    const republished = new Set(
      producer.sent
        .slice(before)
        .filter((send) => send.topic === topics.nodeBundles)
        .flatMap((send) => send.messages.map((message) => message.key)),
    );
    expect(republished.size).toBe(expected.size);
  });
});
