import { randomUUID } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { getTestInfrastructure } from '@policygen/testing-infra';
import type { BundleEvent, GenerationEvent, NodeBundleEvent } from '../contract';
import { NODE_BUNDLES_TOPIC_CONFIG, TOPICS, topicsFor } from '../contract';
import type { SdkLogger } from '../consumer/logger';
import { createConsumer } from '../create-consumer';
import type { Connection } from '../connection';
import { readLatestBundles } from '../latest/latest-bundles';

const quiet: SdkLogger = { info: () => undefined, warn: () => undefined, error: () => undefined };
const AT = '2026-11-24T10:00:00.000Z';

function bundle(nodeId: string, revision: number): BundleEvent {
  return {
    schemaVersion: 1,
    type: 'node.bundle',
    nodeId,
    revision,
    committedAt: AT,
    hash: `sha256:${String(revision % 10).repeat(64)}`,
    files: [],
    manifestSha256: 'ab'.repeat(32),
  };
}

function result(nodeId: string, revision: number): GenerationEvent {
  return {
    schemaVersion: 1,
    type: 'generation.result',
    nodeId,
    revision,
    outcome: 'generated',
    hash: `sha256:${'cd'.repeat(32)}`,
    errors: [],
    durationMs: 1,
  };
}

describe('the SDK on real Kafka', () => {
  const brokers = [...getTestInfrastructure().kafkaBrokers];
  const kafka = new Kafka({ brokers, logLevel: logLevel.NOTHING });
  const producer = kafka.producer();
  const namespace = `sdk-kafka-${randomUUID().slice(0, 8)}`;
  const topics = topicsFor(namespace);
  const connection: Connection = { kafka: { brokers }, namespace };

  beforeAll(async () => {
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({
      waitForLeaders: true,
      topics: [
        {
          topic: topics.nodeBundles,
          numPartitions: 3,
          configEntries: Object.entries(NODE_BUNDLES_TOPIC_CONFIG).map(([name, value]) => ({
            name,
            value,
          })),
        },
        { topic: topics.generationEvents, numPartitions: 3 },
      ],
    });
    await admin.disconnect();
    await producer.connect();
  });
  afterAll(() => producer.disconnect());

  it("rebuilds every node's latest bundle from the compacted topic; a node.deleted removes its node", async () => {
    const record = (event: NodeBundleEvent) => ({ key: event.nodeId, value: JSON.stringify(event) });
    const deleted: NodeBundleEvent = {
      schemaVersion: 1,
      type: 'node.deleted',
      nodeId: 'n2',
      revision: 6,
      committedAt: AT,
    };
    await producer.send({
      topic: topics.nodeBundles,
      messages: [
        record(bundle('n1', 1)),
        record(bundle('n2', 1)),
        record(bundle('n1', 2)),
        record(bundle('n3', 5)),
        record(deleted),
      ],
    });
    const latest = await readLatestBundles(connection, { logger: quiet, timeoutMs: 60_000 });
    expect(Object.fromEntries([...latest].map(([node, event]) => [node, event.revision]))).toEqual({
      n1: 2,
      n3: 5,
    });
  }, 90_000);

  it('is caught up once the backlog is handled, retries a handler that fails for a while, and resumes after a stop', async () => {
    const groupId = `${namespace}-results`;
    await producer.send({
      topic: topics.generationEvents,
      messages: Array.from({ length: 30 }, (_, index) => ({
        key: `node-${index % 7}`,
        value: JSON.stringify(result(`node-${index % 7}`, index + 1)),
      })),
    });
    const handled: number[] = [];
    let failuresLeft = 2;
    const first = createConsumer(connection, {
      groupId,
      logger: quiet,
      retry: { attempts: 3, initialDelayMs: 5, maxDelayMs: 10 },
    }).subscribe(TOPICS.generationEvents, (event) => {
      if (event.revision === 10 && failuresLeft > 0) {
        failuresLeft -= 1;
        throw new Error('flaky');
      }
      handled.push(event.revision);
    });
    await first.start();
    await first.caughtUp(TOPICS.generationEvents);
    expect([...handled].sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, index) => index + 1));
    expect(first.stats()).toMatchObject({ handled: 30, retried: 2, deadLettered: 0 });
    await first.stop();

    await producer.send({
      topic: topics.generationEvents,
      messages: [{ key: 'node-late', value: JSON.stringify(result('node-late', 31)) }],
    });
    const again: number[] = [];
    const second = createConsumer(connection, { groupId, logger: quiet }).subscribe(
      TOPICS.generationEvents,
      (event) => void again.push(event.revision),
    );
    await second.start();
    await second.caughtUp(TOPICS.generationEvents);
    await second.stop();
    // What the first handled was committed by its stop: only the new event comes.
    expect(again).toEqual([31]);
  }, 120_000);
});
