import 'reflect-metadata';
import { hostname } from 'node:os';
import { z } from 'zod';
import { RedisBundleCache } from '@policygen/cache';
import { topicsFor } from '@policygen/events';
import { createKafkaMessaging } from '@policygen/messaging';
import { env, runService } from '@policygen/service-kit';
import { HttpSnapshotSource } from '@policygen/store';
import { startGeneratorService } from './app/generator-service';

runService({
  name: 'generator-service',
  environment: z.object({
    CONFIG_SERVICE_URL: env.url(),
    /** A reader's API token for the configuration: the config-service's POLICYGEN_SERVICE_TOKEN. */
    POLICYGEN_SERVICE_TOKEN: env.secret(),
    KAFKA_BROKERS: env.brokers(),
    REDIS_URL: env.url(),
    HOST: env.host('0.0.0.0'),
    PORT: env.port(3002),
    LOG_LEVEL: env.logLevel(),
    POLICYGEN_INSTANCE_ID: z.string().min(1).default(hostname()),
    POLICYGEN_GENERATOR_GROUP: z.string().min(1).default('policygen-generator'),
    POLICYGEN_TOPIC_NAMESPACE: z.string().optional(),
    POLICYGEN_REDIS_PREFIX: z.string().default('policygen:'),
    POLICYGEN_PARTITIONS: z.coerce.number().int().min(1).default(12),
    POLICYGEN_SESSION_TIMEOUT_MS: z.coerce.number().int().min(1_000).optional(),
    POLICYGEN_CACHE_BLOB_GRACE_MS: z.coerce.number().int().min(1_000).optional(),
  }),
  async start(settings, logger) {
    const cache = await RedisBundleCache.connect({
      url: settings.REDIS_URL,
      prefix: settings.POLICYGEN_REDIS_PREFIX,
    });
    const generator = await startGeneratorService({
      messaging: createKafkaMessaging({
        brokers: settings.KAFKA_BROKERS,
        clientId: `generator-${settings.POLICYGEN_INSTANCE_ID}`,
      }),
      cache,
      snapshots: new HttpSnapshotSource(settings.CONFIG_SERVICE_URL, settings.POLICYGEN_SERVICE_TOKEN),
      logger: logger.child({ instance: settings.POLICYGEN_INSTANCE_ID }),
      topics: topicsFor(settings.POLICYGEN_TOPIC_NAMESPACE),
      groupId: settings.POLICYGEN_GENERATOR_GROUP,
      instanceId: settings.POLICYGEN_INSTANCE_ID,
      partitions: settings.POLICYGEN_PARTITIONS,
      ...(settings.POLICYGEN_SESSION_TIMEOUT_MS === undefined
        ? {}
        : { sessionTimeoutMs: settings.POLICYGEN_SESSION_TIMEOUT_MS }),
      ...(settings.POLICYGEN_CACHE_BLOB_GRACE_MS === undefined
        ? {}
        : { cacheBlobGraceMs: settings.POLICYGEN_CACHE_BLOB_GRACE_MS }),
    });
    return {
      app: generator.app,
      async stop() {
        await generator.stop();
        await cache.close();
      },
    };
  },
});
