import 'reflect-metadata';
import { pino } from 'pino';
import { createKafkaMessaging } from '@policygen/messaging';
import { PostgresConfigStore } from '@policygen/store';
import { createConfigServiceApp } from './app/create-config-service-app';
import { PinoNestLogger } from './runtime/pino-nest-logger';
import { readServiceConfig, ServiceConfigError } from './runtime/service-config';

const logger = pino({ base: { service: 'config-service' } });

async function main(): Promise<void> {
  const config = readServiceConfig(process.env);
  const messaging = createKafkaMessaging({
    brokers: config.kafkaBrokers,
    clientId: 'config-service',
    log: ({ level, namespace, message, extra }) =>
      logger[level]({ source: 'kafka', namespace, ...extra }, message),
  });
  const store = new PostgresConfigStore({
    connectionString: config.databaseUrl,
    schema: config.schema,
    changeTopic: config.changeTopic,
    maxEventBytes: config.maxEventBytes,
  });
  const app = await createConfigServiceApp({
    store,
    messaging,
    bodyLimitBytes: config.bodyLimitBytes,
    changeTopic: config.changeTopic,
    nodeTokenSecret: config.nodeTokenSecret,
    logger: new PinoNestLogger(logger),
  }).catch(async (error: unknown) => {
    await store.close();
    throw error;
  });
  app.enableShutdownHooks();
  // Idle connections outlive the clients' own keep-alive (Node's 5 s would close one under a
  // client about to reuse it: "other side closed").
  Object.assign(app.getHttpServer(), { keepAliveTimeout: 65_000, headersTimeout: 66_000 });
  if (config.host === null) await app.listen(config.port);
  else await app.listen(config.port, config.host);
  logger.info({ port: config.port, schema: config.schema }, 'config service listening');
}

main().catch((error: unknown) => {
  if (error instanceof ServiceConfigError) logger.fatal(error.message);
  else logger.fatal({ err: error }, `config service failed to start: ${(error as Error).message}`);
  // Exits even if a half-started client still holds the event loop; pino writes synchronously.
  process.exit(1);
});
