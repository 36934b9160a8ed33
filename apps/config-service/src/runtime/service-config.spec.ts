import { DEFAULT_BODY_LIMIT_BYTES } from '../app/config-service-options';
import { readServiceConfig } from './service-config';

describe('readServiceConfig', () => {
  it('reads the environment, with defaults for what is optional', () => {
    expect(readServiceConfig({ DATABASE_URL: 'postgres://db/x', KAFKA_BROKERS: 'k1:9092, k2:9092' })).toEqual(
      {
        databaseUrl: 'postgres://db/x',
        kafkaBrokers: ['k1:9092', 'k2:9092'],
        host: null,
        port: 3001,
        schema: 'public',
        bodyLimitBytes: DEFAULT_BODY_LIMIT_BYTES,
        changeTopic: 'policygen.config.changes.v1',
        maxEventBytes: 900 * 1024,
        nodeTokenSecret: null,
      },
    );
    expect(
      readServiceConfig({
        DATABASE_URL: 'postgres://db/x',
        KAFKA_BROKERS: 'k1:9092',
        PORT: '8080',
        POLICYGEN_DB_SCHEMA: 'cs',
        POLICYGEN_MAX_BODY_BYTES: '1024',
        POLICYGEN_TOPIC_NAMESPACE: 'staging',
        POLICYGEN_MAX_EVENT_BYTES: '2048',
        HOST: '127.0.0.1',
        POLICYGEN_NODE_TOKEN_SECRET: 'a-secret-of-20-chars',
      }),
    ).toMatchObject({
      host: '127.0.0.1',
      nodeTokenSecret: 'a-secret-of-20-chars',
      port: 8080,
      schema: 'cs',
      bodyLimitBytes: 1024,
      changeTopic: 'staging.policygen.config.changes.v1',
      maxEventBytes: 2048,
    });
  });

  it('names every missing or wrong variable at once', () => {
    expect(() =>
      readServiceConfig({
        PORT: 'eighty',
        POLICYGEN_MAX_BODY_BYTES: '0',
        POLICYGEN_TOPIC_NAMESPACE: 'a b',
        POLICYGEN_NODE_TOKEN_SECRET: 'short',
      }),
    ).toThrow(
      'invalid configuration: DATABASE_URL is required (e.g. postgres://user@host:5432/db); ' +
        'KAFKA_BROKERS is required (host:port, comma-separated); ' +
        'PORT must be an integer from 0 to 65535, not "eighty"; ' +
        `POLICYGEN_MAX_BODY_BYTES must be an integer from 1 to ${Number.MAX_SAFE_INTEGER}, not "0"; ` +
        `POLICYGEN_TOPIC_NAMESPACE: a topic namespace uses letters, digits, '.', '_' and '-' only, not "a b"; ` +
        'POLICYGEN_NODE_TOKEN_SECRET must be at least 16 characters',
    );
  });
});
