import { getTestInfrastructure } from './test-infrastructure';

describe('getTestInfrastructure', () => {
  it('returns the services the environment names', () => {
    expect(
      getTestInfrastructure({
        KAFKA_BROKERS: '127.0.0.1:1, 127.0.0.1:2',
        REDIS_URL: 'redis://127.0.0.1:3',
        DATABASE_URL: 'postgres://u@127.0.0.1:4/db',
      }),
    ).toEqual({
      kafkaBrokers: ['127.0.0.1:1', '127.0.0.1:2'],
      redisUrl: 'redis://127.0.0.1:3',
      databaseUrl: 'postgres://u@127.0.0.1:4/db',
    });
  });

  it('throws, naming what is missing, rather than letting a suite run without its services', () => {
    expect(() => getTestInfrastructure({ REDIS_URL: 'redis://x' })).toThrow(
      /No test infrastructure: KAFKA_BROKERS, DATABASE_URL not set/,
    );
  });
});
