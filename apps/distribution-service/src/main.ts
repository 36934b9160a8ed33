import 'reflect-metadata';
import { hostname } from 'node:os';
import { z } from 'zod';
import { RedisBundleCache } from '@policygen/cache';
import { topicsFor } from '@policygen/events';
import { createKafkaMessaging } from '@policygen/messaging';
import { env, runService } from '@policygen/service-kit';
import { HttpSnapshotSource } from '@policygen/store';
import { startDistributionService } from './app/distribution-service';

runService({
  name: 'distribution-service',
  environment: z.object({
    CONFIG_SERVICE_URL: env.url(),
    /** A reader's API token for the configuration: the config-service's POLICYGEN_SERVICE_TOKEN. */
    POLICYGEN_SERVICE_TOKEN: env.secret(),
    KAFKA_BROKERS: env.brokers(),
    REDIS_URL: env.url(),
    HOST: env.host('0.0.0.0'),
    PORT: env.port(3003),
    LOG_LEVEL: env.logLevel(),
    POLICYGEN_DATA_DIR: z.string().min(1).default('/var/lib/policygen/distribution'),
    // Signs the nodes' tokens with the config-service: no deployment runs without one.
    POLICYGEN_NODE_TOKEN_SECRET: env.secret(),
    POLICYGEN_INSTANCE_ID: z.string().min(1).default(hostname()),
    POLICYGEN_DISTRIBUTION_GROUP: z.string().min(1).default('policygen-distribution'),
    POLICYGEN_TOPIC_NAMESPACE: z.string().optional(),
    POLICYGEN_REDIS_PREFIX: z.string().default('policygen:'),
    POLICYGEN_PARTITIONS: z.coerce.number().int().min(1).default(12),
    POLICYGEN_SESSION_TIMEOUT_MS: z.coerce.number().int().min(1_000).optional(),
    POLICYGEN_BLOB_GRACE_MS: z.coerce.number().int().min(0).default(600_000),
    /** Writes the deprecated latest-bundles topic too, for consumers that still read it. */
    POLICYGEN_LATEST_BUNDLES_TOPIC: env.flag(false),
  }),
  async start(settings, logger) {
    const cache = await RedisBundleCache.connect({
      url: settings.REDIS_URL,
      prefix: settings.POLICYGEN_REDIS_PREFIX,
    });
    const service = await startDistributionService({
      messaging: createKafkaMessaging({
        brokers: settings.KAFKA_BROKERS,
        clientId: `distribution-${settings.POLICYGEN_INSTANCE_ID}`,
      }),
      cache,
      snapshots: new HttpSnapshotSource(settings.CONFIG_SERVICE_URL, settings.POLICYGEN_SERVICE_TOKEN),
      logger,
      topics: topicsFor(settings.POLICYGEN_TOPIC_NAMESPACE),
      dataDir: settings.POLICYGEN_DATA_DIR,
      tokenSecret: settings.POLICYGEN_NODE_TOKEN_SECRET,
      groupId: settings.POLICYGEN_DISTRIBUTION_GROUP,
      instanceId: settings.POLICYGEN_INSTANCE_ID,
      partitions: settings.POLICYGEN_PARTITIONS,
      blobGraceMs: settings.POLICYGEN_BLOB_GRACE_MS,
      latestBundlesTopic: settings.POLICYGEN_LATEST_BUNDLES_TOPIC,
      ...(settings.POLICYGEN_SESSION_TIMEOUT_MS === undefined
        ? {}
        : { sessionTimeoutMs: settings.POLICYGEN_SESSION_TIMEOUT_MS }),
    });
    return {
      app: service.app,
      async stop() {
        await service.stop();
        await cache.close();
      },
    };
  },
});
