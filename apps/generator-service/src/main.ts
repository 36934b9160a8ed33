import 'reflect-metadata';
import { hostname } from 'node:os';
import pino from 'pino';
import { z } from 'zod';
import { RedisBundleCache } from '@policygen/cache';
import { topicsFor } from '@policygen/events';
import { createKafkaMessaging } from '@policygen/messaging';
import { startGeneratorService } from './app/generator-service';
import { HttpSnapshotSource } from '@policygen/store';

const environment = z.object({
  CONFIG_SERVICE_URL: z.url(),
  KAFKA_BROKERS: z.string().min(1),
  REDIS_URL: z.url(),
  HOST: z.string().min(1).default('0.0.0.0'),
  PORT: z.coerce.number().int().min(0).default(3002),
  POLICYGEN_INSTANCE_ID: z.string().min(1).default(hostname()),
  POLICYGEN_GENERATOR_GROUP: z.string().min(1).default('policygen-generator'),
  POLICYGEN_TOPIC_NAMESPACE: z.string().optional(),
  POLICYGEN_REDIS_PREFIX: z.string().default('policygen:'),
  POLICYGEN_PARTITIONS: z.coerce.number().int().min(1).default(12),
  POLICYGEN_SESSION_TIMEOUT_MS: z.coerce.number().int().min(1_000).optional(),
  POLICYGEN_CACHE_BLOB_GRACE_MS: z.coerce.number().int().min(1_000).optional(),
});

async function main(): Promise<void> {
  const logger = pino({ name: 'generator-service' });
  const parsed = environment.safeParse(process.env);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) logger.fatal(`${issue.path.join('.')}: ${issue.message}`);
    process.exit(2);
  }
  const env = parsed.data;
  const cache = await RedisBundleCache.connect({ url: env.REDIS_URL, prefix: env.POLICYGEN_REDIS_PREFIX });
  const generator = await startGeneratorService({
    messaging: createKafkaMessaging({
      brokers: env.KAFKA_BROKERS.split(',').map((broker) => broker.trim()),
      clientId: `generator-${env.POLICYGEN_INSTANCE_ID}`,
    }),
    cache,
    snapshots: new HttpSnapshotSource(env.CONFIG_SERVICE_URL),
    logger,
    topics: topicsFor(env.POLICYGEN_TOPIC_NAMESPACE),
    groupId: env.POLICYGEN_GENERATOR_GROUP,
    instanceId: env.POLICYGEN_INSTANCE_ID,
    partitions: env.POLICYGEN_PARTITIONS,
    ...(env.POLICYGEN_SESSION_TIMEOUT_MS === undefined
      ? {}
      : { sessionTimeoutMs: env.POLICYGEN_SESSION_TIMEOUT_MS }),
    ...(env.POLICYGEN_CACHE_BLOB_GRACE_MS === undefined
      ? {}
      : { cacheBlobGraceMs: env.POLICYGEN_CACHE_BLOB_GRACE_MS }),
  });
  // Idle connections outlive the clients' own keep-alive (Node's 5 s would close one under a
  // client about to reuse it: "other side closed").
  Object.assign(generator.app.getHttpServer(), { keepAliveTimeout: 65_000, headersTimeout: 66_000 });
  await generator.app.listen(env.PORT, env.HOST);
  logger.info(
    { url: await generator.app.getUrl(), instance: env.POLICYGEN_INSTANCE_ID },
    'generator-service started',
  );

  let stopping = false;
  const shutdown = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    await generator.stop();
    await cache.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((error: unknown) => {
  pino({ name: 'generator-service' }).fatal({ err: error }, 'generator-service failed to start');
  process.exit(1);
});
