import 'reflect-metadata';
import { topicsFor } from '@policygen/events';
import { createKafkaMessaging } from '@policygen/messaging';
import { runService } from '@policygen/service-kit';
import { PostgresConfigStore } from '@policygen/store';
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
    const store = new PostgresConfigStore({
      connectionString: settings.DATABASE_URL,
      schema: settings.POLICYGEN_DB_SCHEMA,
      changeTopic: topics.configChanges,
      maxEventBytes: settings.POLICYGEN_MAX_EVENT_BYTES,
    });
    const app = await createConfigServiceApp({
      store,
      messaging,
      logger,
      topics,
      changeTopic: topics.configChanges,
      partitions: settings.POLICYGEN_PARTITIONS,
      generatorGroup: settings.POLICYGEN_GENERATOR_GROUP,
      bodyLimitBytes: settings.POLICYGEN_MAX_BODY_BYTES,
      nodeTokenSecret: settings.POLICYGEN_NODE_TOKEN_SECRET,
      tokenRequestsPerMinute: settings.POLICYGEN_TOKEN_RATE_PER_MINUTE,
    }).catch(async (error: unknown) => {
      await store.close();
      throw error;
    });
    return { app, stop: () => app.close() };
  },
});
