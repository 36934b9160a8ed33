import { EnvironmentError, readEnvironment } from '@policygen/service-kit';
import { DEFAULT_BODY_LIMIT_BYTES, DEFAULT_OUTBOX_WINDOW_MS } from '../app/config-service-options';
import { configServiceEnvironment } from './environment';

describe('the config service environment', () => {
  it('reads the environment, with defaults for what is optional', () => {
    expect(
      readEnvironment(configServiceEnvironment, {
        DATABASE_URL: 'postgres://db/x',
        KAFKA_BROKERS: 'k1:9092, k2:9092',
        POLICYGEN_NODE_TOKEN_SECRET: 'a-long-random-secret-0123456789',
      }),
    ).toEqual({
      DATABASE_URL: 'postgres://db/x',
      KAFKA_BROKERS: ['k1:9092', 'k2:9092'],
      HOST: '0.0.0.0',
      PORT: 3001,
      LOG_LEVEL: 'info',
      POLICYGEN_DB_SCHEMA: 'public',
      POLICYGEN_MAX_BODY_BYTES: DEFAULT_BODY_LIMIT_BYTES,
      POLICYGEN_MAX_EVENT_BYTES: 900 * 1024,
      POLICYGEN_OUTBOX_WINDOW_MS: DEFAULT_OUTBOX_WINDOW_MS,
      POLICYGEN_PARTITIONS: 12,
      POLICYGEN_GENERATOR_GROUP: 'policygen-generator',
      POLICYGEN_NODE_TOKEN_SECRET: 'a-long-random-secret-0123456789',
      POLICYGEN_TOKEN_RATE_PER_MINUTE: 600,
    });
  });

  it('names every missing or wrong variable at once', () => {
    let error: unknown;
    try {
      readEnvironment(configServiceEnvironment, {
        PORT: 'eighty',
        POLICYGEN_MAX_BODY_BYTES: '0',
        POLICYGEN_OUTBOX_WINDOW_MS: '-1',
        POLICYGEN_TOPIC_NAMESPACE: 'a b',
        POLICYGEN_NODE_TOKEN_SECRET: 'short',
      });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(EnvironmentError);
    expect((error as EnvironmentError).problems.map((problem) => problem.split(':')[0])).toEqual([
      'DATABASE_URL',
      'KAFKA_BROKERS',
      'PORT',
      'POLICYGEN_MAX_BODY_BYTES',
      'POLICYGEN_TOPIC_NAMESPACE',
      'POLICYGEN_NODE_TOKEN_SECRET',
      'POLICYGEN_OUTBOX_WINDOW_MS',
    ]);
  });
});
