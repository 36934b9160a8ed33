import 'reflect-metadata';
import { topicsFor } from '@policygen/events';
import { createKafkaMessaging } from '@policygen/messaging';
import { EnvironmentError, runService } from '@policygen/service-kit';
import { PostgresApiTokenStore, PostgresConfigStore, inForce } from '@policygen/store';
import { createConfigServiceApp } from './app/create-config-service-app';
import { configServiceEnvironment } from './runtime/environment';

runService({
  name: 'config-service',
  environment: configServiceEnvironment,
  async start(settings, logger) {
    const topics = topicsFor(settings.POLICYGEN_TOPIC_NAMESPACE);
    const messaging = createKafkaMessaging({
      brokers: settings.KAFKA_BROKERS,
      clientId: 'config-service',
      log: ({ level, namespace, message, extra }) =>
        logger[level]({ source: 'kafka', namespace, ...extra }, message),
    });
    const onConnectionError = (error: Error): void =>
      logger.warn({ err: error }, 'a Postgres connection failed; the next query connects again');
    const store = new PostgresConfigStore({
      onConnectionError,
      connectionString: settings.DATABASE_URL,
      schema: settings.POLICYGEN_DB_SCHEMA,
      changeTopic: topics.configChanges,
      maxEventBytes: settings.POLICYGEN_MAX_EVENT_BYTES,
    });
    const apiTokens = new PostgresApiTokenStore({
      onConnectionError,
      connectionString: settings.DATABASE_URL,
      schema: settings.POLICYGEN_DB_SCHEMA,
    });
    if (settings.POLICYGEN_ADMIN_TOKEN === undefined) {
      await apiTokens.migrate();
      const now = new Date();
      const admins = (await apiTokens.list()).filter(
        (token) => token.role === 'admin' && inForce(token, now),
      );
      if (admins.length === 0) {
        await Promise.all([apiTokens.close(), store.close()]);
        throw new EnvironmentError([
          'POLICYGEN_ADMIN_TOKEN: required (or POLICYGEN_ADMIN_TOKEN_FILE) while no admin API token exists: nobody could manage the service',
        ]);
      }
    }
    const app = await createConfigServiceApp({
      store,
      apiTokens,
      environmentTokens: {
        admin: settings.POLICYGEN_ADMIN_TOKEN ?? null,
        services: settings.POLICYGEN_SERVICE_TOKEN ?? null,
      },
      messaging,
      logger,
      topics,
      changeTopic: topics.configChanges,
      partitions: settings.POLICYGEN_PARTITIONS,
      outboxWindowMs: settings.POLICYGEN_OUTBOX_WINDOW_MS,
      generatorGroup: settings.POLICYGEN_GENERATOR_GROUP,
      bodyLimitBytes: settings.POLICYGEN_MAX_BODY_BYTES,
      nodeTokenSecret: settings.POLICYGEN_NODE_TOKEN_SECRET,
      tokenRequestsPerMinute: settings.POLICYGEN_TOKEN_RATE_PER_MINUTE,
    }).catch(async (error: unknown) => {
      await Promise.all([store.close(), apiTokens.close()]);
      throw error;
    });
    return { app, stop: () => app.close() };
  },
});
