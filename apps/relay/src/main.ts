import 'reflect-metadata';
import pino from 'pino';
import { z } from 'zod';
import { startRelay } from './app/relay-service';

const environment = z.object({
  POLICYGEN_RELAY_ID: z.string().min(1),
  POLICYGEN_PARENT_URL: z.url(),
  HOST: z.string().min(1).default('0.0.0.0'),
  PORT: z.coerce.number().int().min(0).default(3004),
  POLICYGEN_DATA_DIR: z.string().min(1).default('/var/lib/policygen/relay'),
  POLICYGEN_POLL_WAIT_MS: z.coerce.number().int().min(0).max(60_000).default(25_000),
  POLICYGEN_BLOB_GRACE_MS: z.coerce.number().int().min(0).default(600_000),
});

async function main(): Promise<void> {
  const logger = pino({ name: 'relay' });
  const parsed = environment.safeParse(process.env);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) logger.fatal(`${issue.path.join('.')}: ${issue.message}`);
    process.exit(2);
  }
  const env = parsed.data;
  const relay = await startRelay({
    relayId: env.POLICYGEN_RELAY_ID,
    parentUrl: env.POLICYGEN_PARENT_URL,
    dataDir: env.POLICYGEN_DATA_DIR,
    logger: logger.child({ relay: env.POLICYGEN_RELAY_ID }),
    pollWaitMs: env.POLICYGEN_POLL_WAIT_MS,
    blobGraceMs: env.POLICYGEN_BLOB_GRACE_MS,
  });
  // Idle connections outlive the clients' own keep-alive (Node's 5 s would close one under a
  // client about to reuse it: "other side closed").
  Object.assign(relay.app.getHttpServer(), { keepAliveTimeout: 65_000, headersTimeout: 66_000 });
  await relay.app.listen(env.PORT, env.HOST);
  logger.info(
    { url: await relay.app.getUrl(), relay: env.POLICYGEN_RELAY_ID, parent: env.POLICYGEN_PARENT_URL },
    'relay started',
  );

  let stopping = false;
  const shutdown = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    await relay.stop();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((error: unknown) => {
  pino({ name: 'relay' }).fatal({ err: error }, 'relay failed to start');
  process.exit(1);
});
