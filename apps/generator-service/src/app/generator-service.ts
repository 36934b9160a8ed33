import type { Logger } from 'pino';
import type { BundleCache } from '@policygen/cache';
import type { TopicNames } from '@policygen/events';
import type { Messaging } from '@policygen/messaging';
import { BundlePublisher } from '../generation/bundle-publisher';
import { EventConsumers } from '../generation/event-consumers';
import type { GenerationStatus } from '../generation/generation-loop';
import { GenerationLoop } from '../generation/generation-loop';
import type { SnapshotSource } from '../generation/snapshot-source';

export interface GeneratorServiceOptions {
  readonly messaging: Messaging;
  readonly cache: BundleCache;
  readonly snapshots: SnapshotSource;
  readonly logger: Logger;
  readonly topics: TopicNames;
  readonly groupId: string;
  readonly instanceId: string;
  /** Partitions of the generation-request topic (and of the per-node output topics) when created. */
  readonly partitions: number;
  readonly sessionTimeoutMs?: number;
  readonly sliceSize?: number;
}

export interface GeneratorService {
  status(): GenerationStatus;
  stop(): Promise<void>;
}

/** Wires the generator: topics, the idempotent producer, the loop and its consumers. */
export async function startGeneratorService(options: GeneratorServiceOptions): Promise<GeneratorService> {
  const { topics, messaging, logger } = options;
  const admin = await messaging.createAdmin();
  try {
    await admin.createTopics([
      { name: topics.configChanges, partitions: 1 },
      { name: `${topics.configChanges}.dlq`, partitions: 1 },
      { name: topics.generationRequests, partitions: options.partitions },
      { name: `${topics.generationRequests}.dlq`, partitions: 1 },
      { name: topics.nodeBundles, partitions: options.partitions },
      { name: topics.generationEvents, partitions: options.partitions },
    ]);
    // The topic may predate this instance's settings: ownership follows the topic as it is.
    const requestPartitions = await admin.partitionCount(topics.generationRequests);
    const producer = await messaging.createProducer({ idempotent: true });
    const loop = new GenerationLoop({
      snapshots: options.snapshots,
      cache: options.cache,
      publisher: new BundlePublisher(options.cache, producer, topics),
      logger,
      ...(options.sliceSize === undefined ? {} : { sliceSize: options.sliceSize }),
    });
    const consumers = new EventConsumers(
      messaging,
      producer,
      loop,
      {
        topics,
        groupId: options.groupId,
        instanceId: options.instanceId,
        requestPartitions,
        ...(options.sessionTimeoutMs === undefined ? {} : { sessionTimeoutMs: options.sessionTimeoutMs }),
      },
      logger,
    );
    loop.start();
    await consumers.start();
    return {
      status: () => loop.status(),
      async stop() {
        await consumers.stop();
        await loop.stop();
        await producer.close();
      },
    };
  } finally {
    await admin.close();
  }
}
