import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { createClient } from 'redis';
import { RedisBundleCache } from '@policygen/cache';
import type { Fleet } from '@policygen/engine';
import { fleetShare, GENERATED_AT_FILE, GenerationEngine, validateFleet } from '@policygen/engine';
import type { GenerationEvent } from '@policygen/events';
import { topicsFor } from '@policygen/events';
import { buildDemoFleet } from '@policygen/fleets';
import type { MessageConsumer, MessageProducer, OutgoingMessage, TopicMessages } from '@policygen/messaging';
import { createKafkaMessaging, PublishRejectedError } from '@policygen/messaging';
import { eventually, getTestInfrastructure } from '@policygen/testing-infra';
import { BUNDLE_TOO_LARGE, BundlePublisher } from './bundle-publisher';
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

/** Each node's hash as one engine of the whole fleet gives it at revision 4 (failed nodes left out). */
function referenceHashes(fleet: Fleet): Map<string, string> {
  const reference = GenerationEngine.fromFleet(fleet, { revision: 4 });
  reference.regenerate();
  const hashes = new Map<string, string>();
  for (const [nodeId, result] of reference.allResults())
    if (result.status === 'ok' && result.hash) hashes.set(nodeId, result.hash);
  return hashes;
}

/** The harness's Kafka, with the topics the loop publishes to. */
async function messagingWithOutputTopics(topics: ReturnType<typeof topicsFor>) {
  const messaging = createKafkaMessaging({ brokers: infra.kafkaBrokers, log: () => undefined });
  const admin = await messaging.createAdmin();
  await admin.createTopics([
    { name: topics.nodeBundles, partitions: 2 },
    { name: topics.generationEvents, partitions: 2 },
    { name: topics.pipelineSummaries, partitions: 1 },
  ]);
  await admin.close();
  return messaging;
}

/** Removes a test's keys from the harness's Redis. */
async function deleteKeys(prefix: string): Promise<void> {
  const client = createClient({ url: infra.redisUrl });
  await client.connect();
  const keys = await client.keys(`${prefix}*`);
  if (keys.length > 0) await client.del(keys);
  await client.close();
}

/**
 * The real producer, whose sends fail while `failing` is above zero (one failure per send), and
 * are refused for good while `refusing` holds (as a broker refuses a topic it does not allow).
 */
class FlakyProducer implements MessageProducer {
  failing = 0;
  refusing = false;
  readonly sent: { topic: string; messages: readonly OutgoingMessage[] }[] = [];

  constructor(private readonly producer: MessageProducer) {}

  async send(topic: string, messages: readonly OutgoingMessage[]): Promise<void> {
    if (this.failing > 0) {
      this.failing--;
      throw new Error('broker unreachable (injected)');
    }
    if (this.refusing) throw new PublishRejectedError(`${topic}: refused (injected)`, topic);
    await this.producer.send(topic, messages);
    this.sent.push({ topic, messages });
  }

  async sendAll(sends: readonly TopicMessages[]): Promise<void> {
    if (this.failing > 0) {
      this.failing--;
      throw new Error('broker unreachable (injected)');
    }
    const topics = sends.map(({ topic }) => topic).join(', ');
    if (this.refusing) throw new PublishRejectedError(`${topics}: refused (injected)`, topics);
    await this.producer.sendAll(sends);
    this.sent.push(...sends);
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
  let publisher: BundlePublisher;
  let loop: GenerationLoop;

  beforeAll(async () => {
    for (const [nodeId, hash] of referenceHashes(fleet)) expected.set(nodeId, hash);

    const messaging = await messagingWithOutputTopics(topics);
    producer = new FlakyProducer(await messaging.createProducer({ idempotent: true }));
    cache = await RedisBundleCache.connect({ url: infra.redisUrl, prefix });
    const snapshots: SnapshotSource = { latest: () => Promise.resolve({ revision: 4, fleet }) };
    loop = new GenerationLoop({
      snapshots,
      cache,
      publisher: (publisher = new BundlePublisher(cache, producer, topics)),
      logger: pino({ level: 'silent' }),
      sliceSize: 50,
      retryDelayMs: 50,
    });
    // The first three sends fail: the slices they carried must still be published.
    producer.failing = 3;
    loop.start();
    loop.enqueue({ kind: 'ownership', owns: () => true, description: 'every node', everyNode: true });
  });
  afterAll(async () => {
    await loop.stop();
    await producer.close();
    await cache.close();
    await deleteKeys(prefix);
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

  it('computes while the cache says whether it was flushed, and publishes nothing before it has', async () => {
    await settled();
    const nodeId = [...expected.keys()].find((id) => id !== 'web-par-001' && id !== 'web-par-002') as string;
    const claim = cache.claimFreshness.bind(cache);
    let answer: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (answer = resolve));
    const claims = jest.spyOn(cache, 'claimFreshness').mockImplementationOnce(async () => {
      await held;
      return claim();
    });
    const computed = jest.spyOn(publisher, 'published');
    const before = producer.sent.length;
    const sentBefore = bundlesSentFor(nodeId);
    try {
      loop.enqueue({ kind: 'request', nodeId, revision: 4 });
      await eventually(() => computed.mock.calls.length > 0, {
        what: 'the node computed, the cache not answered',
      });
      expect(claims).toHaveBeenCalledTimes(1);
      expect(producer.sent.length).toBe(before);
      answer();
      await eventually(() => bundlesSentFor(nodeId) > sentBefore, {
        what: 'the node published once the cache answered',
      });
      await settled();
      expect(await served()).toEqual(expected);
    } finally {
      answer();
      claims.mockRestore();
      computed.mockRestore();
    }
  });

  it('publishes a node again when a consumer asks for it, and only that node, with all its files', async () => {
    // A consumer asks because files are missing: every one the node names goes to the cache again,
    // its manifest's parts too (they are left out of a slice only when known to be stored).
    // The node's files as its last event listed them (the cache's record keeps digests only).
    const events = producer.sent
      .filter((send) => send.topic === topics.nodeBundles)
      .flatMap((send) => send.messages.filter((message) => message.key === 'web-par-001'));
    const last = JSON.parse(String(events[events.length - 1]?.value)) as {
      files: { path: string; sha256: string }[];
    };
    const digests = last.files.filter((file) => file.path !== GENERATED_AT_FILE).map((file) => file.sha256);
    expect((await cache.nodeBundle('web-par-001'))?.digests).toEqual(last.files.map((file) => file.sha256));
    expect(digests.length).toBeGreaterThan(2);
    const client = createClient({ url: infra.redisUrl });
    await client.connect();
    await client.del(digests.map((digest) => `${prefix}blob:${digest}`));
    await client.close();
    expect((await cache.getBlobs(digests)).filter((content) => content !== null)).toEqual([]);
    const before = producer.sent.length;
    loop.enqueue({ kind: 'request', nodeId: 'web-par-001', revision: 4 });
    await eventually(() => producer.sent.length > before, { what: 'a send after the request' });
    await settled();
    const bundles = producer.sent
      .slice(before)
      .filter((send) => send.topic === topics.nodeBundles)
      .flatMap((send) => send.messages.map((message) => message.key));
    expect(bundles).toEqual(['web-par-001']);
    expect((await cache.getBlobs(digests)).filter((content) => content === null)).toEqual([]);
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

describe('GenerationLoop, when the bus refuses', () => {
  const fleet = demoFleet();
  const id = randomBytes(5).toString('hex');
  const topics = topicsFor(`loop-refused-${id}`);
  const prefix = `loop-refused:${id}:`;
  const expected = new Map<string, string>();
  /** A bundle event's size, near enough to put the topic's limit among them. */
  const eventBytes = new Map<string, number>();
  let cache: RedisBundleCache;
  let producer: FlakyProducer;
  let loop: GenerationLoop;
  const results: GenerationEvent[] = [];
  let consumer: MessageConsumer;

  beforeAll(async () => {
    const reference = GenerationEngine.fromFleet(fleet, { revision: 4 });
    reference.regenerate();
    for (const [nodeId, result] of reference.allResults()) {
      if (result.status !== 'ok' || !result.hash) continue;
      expected.set(nodeId, result.hash);
      const files = reference.bundle(nodeId).files.map((file) => ({ path: file.path, sha256: file.sha256 }));
      eventBytes.set(nodeId, Buffer.byteLength(JSON.stringify(files)) + 400);
    }
    const sizes = [...eventBytes.values()].sort((a, b) => a - b);
    // About half the bundles are over the limit: 128 bytes of batch header, 32 of record framing.
    const limit = (sizes[Math.floor(sizes.length / 2)] ?? 0) + 128 + 32;

    const messaging = createKafkaMessaging({ brokers: infra.kafkaBrokers, log: () => undefined });
    const admin = await messaging.createAdmin();
    await admin.createTopics([
      { name: topics.nodeBundles, partitions: 2, config: { 'max.message.bytes': String(limit) } },
      { name: topics.generationEvents, partitions: 2 },
      { name: topics.pipelineSummaries, partitions: 1 },
    ]);
    await admin.close();
    consumer = await messaging.createConsumer({
      groupId: `loop-refused-${id}`,
      topics: [topics.generationEvents],
      fromBeginning: true,
    });
    await consumer.start(async (batch) => {
      for (const message of batch.messages)
        results.push(JSON.parse(message.value.toString('utf8')) as GenerationEvent);
    });
    producer = new FlakyProducer(await messaging.createProducer({ idempotent: true }));
    cache = await RedisBundleCache.connect({ url: infra.redisUrl, prefix });
    loop = new GenerationLoop({
      snapshots: { latest: () => Promise.resolve({ revision: 4, fleet }) },
      cache,
      publisher: new BundlePublisher(cache, producer, topics),
      logger: pino({ level: 'silent' }),
      sliceSize: 50,
      retryDelayMs: 50,
      maxRetryDelayMs: 200,
    });
  });
  afterAll(async () => {
    await loop.stop();
    await consumer.close();
    await producer.close();
    await cache.close();
    await deleteKeys(prefix);
  });

  it('says it is stuck while a send is refused for good, and publishes once that is mended', async () => {
    producer.refusing = true;
    loop.start();
    loop.enqueue({ kind: 'ownership', owns: () => true, description: 'every node', everyNode: true });
    await eventually(() => (loop.status().failing?.consecutiveFailures ?? 0) >= 2, {
      what: 'two refused cycles in a row',
    });
    expect(loop.status().failing).toMatchObject({
      retriable: false,
      error: expect.stringContaining('refused'),
    });
    expect(await cache.nodeHashes()).toEqual(new Map());
    producer.refusing = false;
    await eventually(() => loop.status().failing === null && loop.status().pending === 0, {
      what: 'the loop to recover and finish',
      timeoutMs: 30_000,
    });
  });

  it('fails the nodes whose bundle is over the topic limit, each alone, and publishes the others', async () => {
    await eventually(() => results.length >= eventBytes.size, {
      what: `a generation result for each of ${eventBytes.size} nodes`,
      timeoutMs: 30_000,
    });
    const refused = results.filter((event) => event.outcome === 'failed');
    const served = await cache.nodeHashes();
    expect(refused.length).toBeGreaterThan(0);
    expect(served.size).toBeGreaterThan(0);
    for (const event of refused) {
      expect(event.errors).toEqual([{ code: BUNDLE_TOO_LARGE, message: expect.stringContaining('limit') }]);
      expect(event.hash).toBeNull();
      expect(served.has(event.nodeId)).toBe(false);
    }
    expect(new Set([...served.keys(), ...refused.map((event) => event.nodeId)])).toEqual(
      new Set(expected.keys()),
    );
    for (const [nodeId, entry] of served) expect(entry.hash).toBe(expected.get(nodeId));
    // The larger bundles are the ones refused.
    const largestServed = Math.max(...[...served.keys()].map((nodeId) => eventBytes.get(nodeId) ?? 0));
    const smallestRefused = Math.min(...refused.map((event) => eventBytes.get(event.nodeId) ?? 0));
    expect(smallestRefused).toBeGreaterThan(largestServed - 200);
    expect(loop.status().failing).toBeNull();
  });
});

describe('GenerationLoop, with a share of the nodes', () => {
  const fleet = demoFleet();
  const id = randomBytes(5).toString('hex');
  const topics = topicsFor(`loop-share-${id}`);
  const prefix = `loop-share:${id}:`;
  const expected = new Map<string, string>();
  /** The shares the snapshot was asked for, in order (every node when none was named). */
  const loads: ((nodeId: string) => boolean)[] = [];
  const inShare = (nodeId: string): boolean => nodeId.length % 2 === 0;
  /** Loads to fail before the next one succeeds. */
  let failLoads = 0;
  let cache: RedisBundleCache;
  let producer: MessageProducer;
  let loop: GenerationLoop;

  beforeAll(async () => {
    for (const [nodeId, hash] of referenceHashes(fleet)) expected.set(nodeId, hash);
    const messaging = await messagingWithOutputTopics(topics);
    producer = await messaging.createProducer({ idempotent: true });
    cache = await RedisBundleCache.connect({ url: infra.redisUrl, prefix });
    loop = new GenerationLoop({
      snapshots: {
        latest: (options) => {
          loads.push(options?.holds ?? (() => true));
          if (failLoads > 0) {
            failLoads--;
            return Promise.reject(new Error('config-service unreachable (injected)'));
          }
          return Promise.resolve({
            revision: 4,
            fleet: options?.holds ? fleetShare(fleet, options.holds) : fleet,
          });
        },
      },
      cache,
      publisher: new BundlePublisher(cache, producer, topics),
      logger: pino({ level: 'silent' }),
      retryDelayMs: 50,
    });
    loop.start();
  });
  afterAll(async () => {
    await loop.stop();
    await producer.close();
    await cache.close();
    await deleteKeys(prefix);
  });

  async function servedOnceSettled(count: number): Promise<Map<string, string>> {
    await eventually(
      async () => {
        const status = loop.status();
        return (
          status.ready && status.caughtUp && status.queued === 0 && (await cache.nodeHashes()).size === count
        );
      },
      { what: `${count} nodes served`, timeoutMs: 30_000 },
    );
    return new Map([...(await cache.nodeHashes())].map(([nodeId, entry]) => [nodeId, entry.hash]));
  }

  it('loads nothing before it is given its share, then holds and serves that share alone', async () => {
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(loads).toHaveLength(0);
    expect(loop.status()).toMatchObject({ ready: false, ownership: 'none yet' });

    loop.enqueue({ kind: 'ownership', owns: inShare, description: 'even ids' });
    const own = new Map([...expected].filter(([nodeId]) => inShare(nodeId)));
    expect(own.size).toBeGreaterThan(0);
    expect(own.size).toBeLessThan(expected.size);
    expect(await servedOnceSettled(own.size)).toEqual(own);
    expect(loads).toHaveLength(1);
    expect(loop.status().held).toBe(fleet.nodes.filter((node) => inShare(node.id)).length);
    expect(fleet.nodes.filter((node) => loads[0]?.(node.id)).map((node) => node.id)).toEqual(
      fleet.nodes.filter((node) => inShare(node.id)).map((node) => node.id),
    );
  });

  it('keeps its engine when the same share is given again, and loads anew for another share until that succeeds', async () => {
    loop.enqueue({ kind: 'ownership', owns: inShare, description: 'even ids' });
    loop.enqueue({ kind: 'request', nodeId: 'unknown', revision: 4 });
    await eventually(() => loop.status().queued === 0, { what: 'the items taken' });
    expect(loads).toHaveLength(1);

    // The first load of the new share fails: the next cycle loads it again.
    failLoads = 1;
    loop.enqueue({ kind: 'ownership', owns: () => true, description: 'every node', everyNode: true });
    expect(await servedOnceSettled(expected.size)).toEqual(expected);
    expect(loads).toHaveLength(3);
    expect(loop.status().held).toBe(fleet.nodes.length);
    expect(loop.status()).toMatchObject({ ownership: 'every node', failing: null });
  });
});
