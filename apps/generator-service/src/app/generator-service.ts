import 'reflect-metadata';
import { Module } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { ExpressAdapter } from '@nestjs/platform-express';
import type { Logger } from 'pino';
import type { RetryPolicy } from '@policygen/sdk';
import { Gauge, Registry } from 'prom-client';
import type { BundleCache } from '@policygen/cache';
import type { TopicNames } from '@policygen/events';
import { NODE_BUNDLES_TOPIC_CONFIG, TOPICS, topicResolver } from '@policygen/events';
import type { Messaging } from '@policygen/messaging';
import { DeadLetters, DeliveryMonitor, MessagingTransport, partitionForKey } from '@policygen/messaging';
import type { ReadinessCheck } from '@policygen/service-kit';
import {
  BusMonitor,
  ServiceShellModule,
  catchUpCheck,
  collectProcessMetrics,
  createServiceApp,
  deliveryCheck,
  pingCheck,
} from '@policygen/service-kit';
import { BundlePublisher, DEFAULT_CACHE_BLOB_GRACE_MS } from '../generation/bundle-publisher';
import { CacheBlobCollector } from '../generation/cache-blob-collector';
import { GenerationLoop } from '../generation/generation-loop';
import { GeneratorMetrics } from '../generation/generator-metrics';
import { NodeFailures } from '@policygen/events';
import type { SnapshotSource } from '@policygen/store';
import { CHANGE_LOG_GROUP, GeneratorEventsController } from './generator-events.controller';
import { generationReadiness } from './generation-readiness';
import { DEAD_LETTERS, GENERATION_LOOP } from './tokens';

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
  /** The retry budget of its event handlers before a message goes to the DLQ (see `RetryPolicy`). */
  readonly retry?: Partial<RetryPolicy>;
  readonly sliceSize?: number;
  /** How long the cache keeps a blob no bundle names before collecting it (default 1 h). */
  readonly cacheBlobGraceMs?: number;
  /** Process-wide metrics (default metrics) only once per process: the embedded mode runs several services. */
  readonly defaultMetrics?: boolean;
  /** The Express app to serve on (default: one of its own), e.g. mounted beside other services. */
  readonly httpAdapter?: ExpressAdapter;
}

export interface GeneratorService {
  readonly app: NestExpressApplication;
  readonly loop: GenerationLoop;
  readonly failures: NodeFailures;
  /** What its `/health/ready` checks: the embedded mode's root readiness covers it too. */
  readonly readiness: readonly ReadinessCheck[];
  stop(): Promise<void>;
}

/**
 * The generator as a NestJS app: HTTP for health, and its event handlers (`@EventPattern`) on the
 * messaging transport. Topics it needs are created first; the loop starts before the handlers.
 */
export async function startGeneratorService(options: GeneratorServiceOptions): Promise<GeneratorService> {
  const { topics, messaging, logger } = options;
  const admin = await messaging.createAdmin();
  let requestPartitions: number;
  try {
    await admin.createTopics([
      { name: topics.configChanges, partitions: 1 },
      { name: `${topics.configChanges}.dlq`, partitions: 1 },
      { name: topics.generationRequests, partitions: options.partitions },
      { name: `${topics.generationRequests}.dlq`, partitions: 1 },
      { name: topics.nodeBundles, partitions: options.partitions, config: NODE_BUNDLES_TOPIC_CONFIG },
      { name: topics.generationEvents, partitions: options.partitions },
      { name: topics.pipelineSummaries, partitions: 1 },
    ]);
    // The topic may predate this instance's settings: ownership follows the topic as it is.
    requestPartitions = await admin.partitionCount(topics.generationRequests);
  } finally {
    await admin.close();
  }
  const producer = await messaging.createProducer({ idempotent: true });
  const registry = new Registry();
  if (options.defaultMetrics ?? true) collectProcessMetrics(registry);
  const deadLetters = new DeadLetters(producer, logger, registry);
  const delivery = new DeliveryMonitor(logger, registry);
  const failures = new NodeFailures();
  const metrics = new GeneratorMetrics(registry, failures);
  const cacheBlobGraceMs = options.cacheBlobGraceMs ?? DEFAULT_CACHE_BLOB_GRACE_MS;
  const collector = new CacheBlobCollector({
    cache: options.cache,
    graceMs: cacheBlobGraceMs,
    registry,
    logger,
  });
  const publisher = new BundlePublisher(options.cache, producer, topics, metrics, cacheBlobGraceMs);
  const loop = new GenerationLoop({
    snapshots: options.snapshots,
    cache: options.cache,
    publisher,
    logger,
    onFailure: (retriable, consecutive) => metrics.cycleFailed(retriable, consecutive),
    onRecovery: () => metrics.cycleSucceeded(),
    onNodesGone: (nodeIds) => failures.forget(nodeIds),
    onOwnership: (owns) => failures.retain(owns),
    ...(options.sliceSize === undefined ? {} : { sliceSize: options.sliceSize }),
  });

  new Gauge({
    name: 'policygen_generator_held_nodes',
    help: "Nodes of this instance's share in the configuration it holds (the other instances' are left out of it)",
    registers: [registry],
    collect() {
      this.set(loop.status().held);
    },
  });

  registerEngineMemoryMetrics(registry, loop, publisher);

  const changeLogGroup = `${options.groupId}.change-log.${options.instanceId}`;
  const bus = new BusMonitor(messaging, () => [changeLogGroup, options.groupId], registry);
  const readiness: ReadinessCheck[] = [
    { name: 'generation', check: () => generationReadiness(loop.status(), failures) },
    catchUpCheck(
      'change-log',
      async () =>
        (await bus.consumerLag())
          .filter((group) => group.group === changeLogGroup)
          .flatMap((group) => group.partitions)
          .reduce((sum, partition) => sum + partition.lag, 0),
      'change sets',
    ),
    bus.readiness,
    deliveryCheck(delivery),
    pingCheck('cache', () => options.cache.ping(), 'the bundle cache'),
  ];

  @Module({
    imports: [
      ServiceShellModule.forRoot({
        service: 'generator-service',
        logger,
        registry,
        readiness: () => readiness,
        status: () => ({
          instance: options.instanceId,
          ...loop.status(),
          failures: {
            count: failures.count,
            byCode: Object.fromEntries(failures.byCode()),
            first: failures.list(20),
          },
        }),
      }),
    ],
    controllers: [GeneratorEventsController],
    providers: [
      { provide: GENERATION_LOOP, useValue: loop },
      { provide: DEAD_LETTERS, useValue: deadLetters },
    ],
  })
  class GeneratorModule {}

  const transport = new MessagingTransport({
    messaging,
    deadLetters,
    monitor: delivery,
    ...(options.retry === undefined ? {} : { retry: options.retry }),
    topicOf: topicResolver(topics),
    groupOf: (group) =>
      group === CHANGE_LOG_GROUP ? `${options.groupId}.change-log.${options.instanceId}` : options.groupId,
    ...(options.sessionTimeoutMs === undefined ? {} : { sessionTimeoutMs: options.sessionTimeoutMs }),
    onAssignment: (pattern, assigned) => {
      if (pattern !== TOPICS.generationRequests) return;
      const partitions = new Set(assigned);
      const description = `partitions [${[...partitions].sort((a, b) => a - b).join(',')}] of ${requestPartitions}`;
      logger.info({ partitions: [...partitions] }, `owning the nodes of ${description}`);
      loop.enqueue({
        kind: 'ownership',
        owns: (nodeId) => partitions.has(partitionForKey(nodeId, requestPartitions)),
        description,
        everyNode: partitions.size === requestPartitions,
      });
    },
  });

  const app = await createServiceApp(GeneratorModule, { httpAdapter: options.httpAdapter });
  app.connectMicroservice({ strategy: transport });
  loop.start();
  collector.start();
  await app.startAllMicroservices();
  await app.init();
  return {
    app,
    loop,
    failures,
    readiness,
    async stop() {
      await collector.stop();
      await bus.close();
      await app.close();
      await loop.stop();
      await producer.close();
    },
  };
}

/**
 * What the instance's memory holds beyond the fleet, by cache: entries of the engine's caches, the
 * bytes of rendered policies kept, and the blob digests it remembers as stored. Each is bounded
 * (the engine's limits, the remembered digests' cap) or grows with the nodes the instance holds:
 * these say which, when an instance's memory is not what its share predicts.
 */
function registerEngineMemoryMetrics(
  registry: Registry,
  loop: GenerationLoop,
  publisher: BundlePublisher,
): void {
  new Gauge({
    name: 'policygen_generator_engine_cache_entries',
    help: "Entries of the engine's caches: rule plans, property levels, technique policies, rendered policies",
    labelNames: ['cache'],
    registers: [registry],
    collect() {
      const caches = loop.engineCaches();
      this.reset();
      if (!caches) return;
      this.set({ cache: 'plans' }, caches.plans);
      this.set({ cache: 'levels' }, caches.levels);
      this.set({ cache: 'technique_policies' }, caches.techniquePolicies);
      this.set({ cache: 'rendered' }, caches.renderedEntries);
    },
  });
  new Gauge({
    name: 'policygen_generator_engine_rendered_bytes',
    help: "Characters of rendered policy files the engine's cache keeps (bounded by its limit), with 100 a file",
    registers: [registry],
    collect() {
      this.set(loop.engineCaches()?.renderedBytes ?? 0);
    },
  });
  new Gauge({
    name: 'policygen_generator_known_blobs',
    help: 'Blob digests remembered as stored in the cache: their contents are neither rendered nor sent again',
    registers: [registry],
    collect() {
      this.set(publisher.knownBlobs);
    },
  });
}
