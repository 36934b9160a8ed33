import type { MachineCapabilities } from './plan';
import { planInfrastructure } from './plan';

const fullyEquipped: MachineCapabilities = {
  dockerEngine: false,
  localKafkaMissing: undefined,
  localRedisMissing: undefined,
  sharedPostgres: true,
  privatePostgresMissing: undefined,
};
const bare: MachineCapabilities = {
  dockerEngine: false,
  localKafkaMissing: 'java (Java 17) is not on PATH',
  localRedisMissing: 'redis-server is not on PATH',
  sharedPostgres: false,
  privatePostgresMissing: 'PostgreSQL server binaries (initdb, postgres) are not installed',
};

describe('planInfrastructure', () => {
  it('takes services from the environment first, whatever the machine has', () => {
    const plan = planInfrastructure(
      { KAFKA_BROKERS: 'k:9092', REDIS_URL: 'redis://r', DATABASE_URL: 'postgres://p/db' },
      { ...bare, dockerEngine: true },
    );
    expect(plan).toEqual({
      kafka: { source: 'environment', value: 'k:9092' },
      redis: { source: 'environment', value: 'redis://r' },
      postgres: { source: 'environment', value: 'postgres://p/db' },
    });
  });

  it('uses containers when a Docker engine answers, for what the environment does not give', () => {
    const plan = planInfrastructure({ REDIS_URL: 'redis://r' }, { ...fullyEquipped, dockerEngine: true });
    expect(plan.kafka).toEqual({ source: 'containers' });
    expect(plan.redis).toEqual({ source: 'environment', value: 'redis://r' });
    expect(plan.postgres).toEqual({ source: 'containers' });
  });

  it('falls back to local processes without Docker: Kafka from jars, redis-server, the shared PostgreSQL', () => {
    expect(planInfrastructure({}, fullyEquipped)).toEqual({
      kafka: { source: 'local' },
      redis: { source: 'local' },
      postgres: { source: 'local', variant: 'shared' },
    });
  });

  it('starts a private PostgreSQL cluster when the shared one does not answer', () => {
    expect(planInfrastructure({}, { ...fullyEquipped, sharedPostgres: false }).postgres).toEqual({
      source: 'local',
      variant: 'private',
    });
  });

  it('skips Docker when POLICYGEN_TEST_INFRA=local', () => {
    const plan = planInfrastructure(
      { POLICYGEN_TEST_INFRA: 'local' },
      { ...fullyEquipped, dockerEngine: true },
    );
    expect(plan.kafka).toEqual({ source: 'local' });
  });

  it('fails loudly, naming every missing service and what to install, when nothing can provide them', () => {
    let message = '';
    try {
      planInfrastructure({}, bare);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/kafka: KAFKA_BROKERS is not set, no Docker engine answers, and java/);
    expect(message).toMatch(/Java 17 and Maven/);
    expect(message).toMatch(/redis: .*apt-get install -y redis-server/);
    expect(message).toMatch(/postgres: .*PostgreSQL answering on 127\.0\.0\.1:5432/);
  });

  it('fails when containers are demanded and no engine answers', () => {
    expect(() => planInfrastructure({ POLICYGEN_TEST_INFRA: 'containers' }, fullyEquipped)).toThrow(
      /POLICYGEN_TEST_INFRA=containers, but no Docker engine answers/,
    );
  });

  it('rejects an unknown mode', () => {
    expect(() => planInfrastructure({ POLICYGEN_TEST_INFRA: 'cloud' }, fullyEquipped)).toThrow(
      /must be "local" or "containers"/,
    );
  });
});
