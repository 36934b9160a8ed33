import 'reflect-metadata';
import { join } from 'node:path';
import { Module } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { ExpressAdapter } from '@nestjs/platform-express';
import type { Logger } from 'pino';
import type { RetryPolicy } from '@policygen/sdk';
import { Counter, Registry } from 'prom-client';
import type { BundleCache } from '@policygen/cache';
import {
  BLOB_DIRECTORY,
  BlobCollector,
  BlobDirectory,
  CONFIRMATION_SINK,
  DiskHealth,
  FEED_LOG,
  FETCH_RECORDER,
  FeedController,
  FeedLog,
  FetchRecorder,
  NODE_TREES,
  NodeTrees,
  NodesController,
  RELAY_DIRECTORY,
  ROOT_RELAY,
  TopologyRelayDirectory,
  confirmationsOf,
  deploymentAuthenticator,
} from '@policygen/distribution';
import type { GenerationRequest, TopicNames } from '@policygen/events';
import { LATEST_BUNDLES_TOPIC_CONFIG, NODE_BUNDLES_TOPIC_CONFIG, topicResolver } from '@policygen/events';
import type { Messaging } from '@policygen/messaging';
import { DeadLetters, DeliveryMonitor, MessagingTransport } from '@policygen/messaging';
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
import type { PlacementSource } from '@policygen/store';
import { ConfirmationPublisher } from '../distribution/confirmation-publisher';
import { Distributor } from '../distribution/distributor';
import { CHANGE_LOG_GROUP, DistributionEventsController } from './distribution-events.controller';
import { DEAD_LETTERS, DISTRIBUTOR } from './tokens';

export interface DistributionServiceOptions {
  readonly messaging: Messaging;
  readonly cache: BundleCache;
  readonly snapshots: PlacementSource;
  readonly logger: Logger;
  readonly topics: TopicNames;
  /** Blob directory and root feed. */
  readonly dataDir: string;
  /** The deployment's secret: node tokens and relay credentials are checked with it (null: nobody gets in). */
  readonly tokenSecret: string | null;
  /** The consumer group of the bundles; the change log is read in `<group>.change-log.<instance>`. */
  readonly groupId: string;
  readonly instanceId: string;
  readonly partitions: number;
  readonly sessionTimeoutMs?: number;
  /** The retry budget of its event handlers before a message goes to the DLQ (see `RetryPolicy`). */
  readonly retry?: Partial<RetryPolicy>;
  /** The Express app to serve on (default: one of its own), e.g. mounted beside other services. */
  readonly httpAdapter?: ExpressAdapter;
  /** Process-wide metrics (default metrics) only once per process: the embedded mode runs several services. */
  readonly defaultMetrics?: boolean;
  /** How long a blob no bundle references any more is kept before it is deleted (default 10 min). */
  readonly blobGraceMs?: number;
  /**
   * Writes the deprecated latest-bundles topic too, for consumers that still read it (default: no;
   * the compacted node-bundles topic holds every node's latest bundle).
   */
  readonly latestBundlesTopic?: boolean;
}

export interface DistributionService {
  readonly app: NestExpressApplication;
  readonly distributor: Distributor;
  /** What its `/health/ready` checks: the embedded mode's root readiness covers it too. */
  readonly readiness: readonly ReadinessCheck[];
  stop(): Promise<void>;
}

/**
 * The distribution-service as a NestJS app, initialised but not listening: the relays' feeds and
 * blobs over HTTP, the generator's bundles and the change log on the messaging transport. It is
 * relay `root` too, as Rudder's root server is: the nodes get their bundles from its own feed and
 * blobs (`/nodes/:id/policies`), no copy of them on another disk of the same server.
 */
export async function startDistributionService(
  options: DistributionServiceOptions,
): Promise<DistributionService> {
  const { topics, messaging, logger } = options;
  const admin = await messaging.createAdmin();
  try {
    await admin.createTopics([
      { name: topics.configChanges, partitions: 1 },
      { name: `${topics.configChanges}.dlq`, partitions: 1 },
      { name: topics.nodeBundles, partitions: options.partitions, config: NODE_BUNDLES_TOPIC_CONFIG },
      { name: `${topics.nodeBundles}.dlq`, partitions: 1 },
      { name: topics.distributionEvents, partitions: options.partitions },
      { name: topics.pipelineSummaries, partitions: 1 },
      ...(options.latestBundlesTopic
        ? [
            {
              name: topics.latestBundles,
              partitions: options.partitions,
              config: LATEST_BUNDLES_TOPIC_CONFIG,
            },
          ]
        : []),
      // Where bundles the cache cannot complete are asked for again (the generator's topic).
      { name: topics.generationRequests, partitions: options.partitions },
    ]);
  } finally {
    await admin.close();
  }
  const disk = new DiskHealth(logger);
  const log = await FeedLog.open(join(options.dataDir, 'feed.jsonl'), { durable: true, health: disk });
  const blobs = await BlobDirectory.open(join(options.dataDir, 'blobs'), { health: disk });
  const producer = await messaging.createProducer({ idempotent: true });
  const registry = new Registry();
  if (options.defaultMetrics ?? true) collectProcessMetrics(registry);
  const deadLetters = new DeadLetters(producer, logger, registry);
  const delivery = new DeliveryMonitor(logger, registry);
  disk.register(registry);
  const incompleteBundles = new Counter({
    name: 'policygen_distribution_bundles_incomplete_total',
    help: 'Bundles left out because the cache no longer held some of their files (their nodes are asked for again)',
    registers: [registry],
  });
  const latestRecords = new Counter({
    name: 'policygen_distribution_latest_records_total',
    help: "Records written to the deprecated latest-bundles topic (when it is switched on): a node's new current bundle, or its removal (a tombstone)",
    labelNames: ['kind'],
    registers: [registry],
  });
  const writes = new Counter({
    name: 'policygen_distribution_bundle_writes_total',
    help: 'Writes of bundles to the root feed (each one blob fetch, one append, one flush and one send to the bus)',
    registers: [registry],
  });
  const writtenBatches = new Counter({
    name: 'policygen_distribution_bundle_batches_written_total',
    help: 'Batches of bundle events written, several per write when they arrive together (group commit)',
    registers: [registry],
  });
  const confirmations = new ConfirmationPublisher(producer, topics, registry, logger);
  const distributor = new Distributor({
    log,
    blobs,
    cache: options.cache,
    snapshots: options.snapshots,
    logger,
    tokenSecret: options.tokenSecret,
    recordsDistributed: options.latestBundlesTopic === true,
    onMissingBlobs: async (bundles) => {
      incompleteBundles.inc(bundles.length);
      await producer.send(
        topics.generationRequests,
        bundles.map(({ nodeId, revision }) => ({
          key: nodeId,
          value: JSON.stringify({
            schemaVersion: 1,
            type: 'generation.request',
            nodeId,
            revision,
          } satisfies GenerationRequest),
        })),
      );
    },
    onGroupCommit: (batches) => {
      writes.inc();
      writtenBatches.inc(batches);
    },
    onWritten: async ({ entries, distributed: records }) => {
      // The root serves its nodes from this feed: an entry on disk is on relay root, confirmed
      // in the same request to the bus as the latest bundles (when that topic is written).
      const served = confirmationsOf(entries, ROOT_RELAY, new Date().toISOString());
      await producer.sendAll([
        ...(records.length === 0
          ? []
          : [
              {
                topic: topics.latestBundles,
                messages: records.map(({ nodeId, bundle, json }) => ({
                  key: nodeId,
                  value: bundle === null ? null : (json ?? JSON.stringify(bundle)),
                })),
              },
            ]),
        ...confirmations.messagesOf(served),
      ]);
      const tombstones = records.filter((record) => record.bundle === null).length;
      latestRecords.inc({ kind: 'bundle' }, records.length - tombstones);
      latestRecords.inc({ kind: 'tombstone' }, tombstones);
      logger.debug(
        { records: records.length, tombstones, confirmed: served.length },
        'latest bundles published, the root confirmed',
      );
    },
  });
  await distributor.start();
  const bundlesGroup = options.groupId;
  const bus = new BusMonitor(messaging, () => [bundlesGroup], registry);
  const readiness: ReadinessCheck[] = [
    {
      name: 'relay-tree',
      check: () =>
        distributor.status().ready
          ? { ready: true }
          : { ready: false, reason: 'loading the relay tree from the config service' },
    },
    bus.readiness,
    deliveryCheck(delivery),
    disk.readiness,
    pingCheck('cache', () => options.cache.ping(), 'the bundle cache'),
    catchUpCheck(
      'bundles',
      async () =>
        (await bus.consumerLag())
          .flatMap((group) => group.partitions)
          .filter((partition) => partition.topic === topics.nodeBundles)
          .reduce((sum, partition) => sum + partition.lag, 0),
      'bundle events',
    ),
  ];

  @Module({
    imports: [
      ServiceShellModule.forRoot({
        service: 'distribution-service',
        logger,
        registry,
        readiness: () => readiness,
        status: () => distributor.status(),
        // Relays by their credential, nodes by their token: both derive from the deployment's secret.
        authenticator: deploymentAuthenticator(options.tokenSecret),
      }),
    ],
    controllers: [FeedController, NodesController, DistributionEventsController],
    providers: [
      { provide: DISTRIBUTOR, useValue: distributor },
      { provide: FEED_LOG, useValue: log },
      { provide: BLOB_DIRECTORY, useValue: blobs },
      {
        provide: RELAY_DIRECTORY,
        useValue: new TopologyRelayDirectory(options.tokenSecret, () => distributor.relayTopology),
      },
      { provide: CONFIRMATION_SINK, useValue: confirmations },
      { provide: NODE_TREES, useValue: new NodeTrees(ROOT_RELAY, log, blobs) },
      { provide: FETCH_RECORDER, useValue: new FetchRecorder(ROOT_RELAY, registry, confirmations) },
      { provide: DEAD_LETTERS, useValue: deadLetters },
    ],
  })
  class DistributionModule {}

  const transport = new MessagingTransport({
    messaging,
    deadLetters,
    monitor: delivery,
    ...(options.retry === undefined ? {} : { retry: options.retry }),
    topicOf: topicResolver(topics),
    groupOf: (group) =>
      group === CHANGE_LOG_GROUP ? `${options.groupId}.change-log.${options.instanceId}` : options.groupId,
    ...(options.sessionTimeoutMs === undefined ? {} : { sessionTimeoutMs: options.sessionTimeoutMs }),
  });

  const app = await createServiceApp(DistributionModule, { httpAdapter: options.httpAdapter });
  app.connectMicroservice({ strategy: transport });
  await app.startAllMicroservices();
  await app.init();
  // Every latest bundle's blobs count as referenced: the root serves the whole tree.
  const collector = new BlobCollector({
    blobs,
    log,
    graceMs: options.blobGraceMs ?? 600_000,
    registry,
    logger,
  });
  collector.start();
  return {
    app,
    distributor,
    readiness,
    async stop() {
      await collector.stop();
      await bus.close();
      // The log first: it releases the relays' long polls, which would hold the HTTP server open.
      await log.close();
      await app.close();
      await producer.close();
    },
  };
}
