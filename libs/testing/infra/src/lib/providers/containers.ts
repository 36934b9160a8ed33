import { PostgreSqlContainer } from '@testcontainers/postgresql';
import { RedisContainer } from '@testcontainers/redis';
import { GenericContainer, getContainerRuntimeClient, Wait } from 'testcontainers';
import { freePort, orAfter } from '../net';
import type { ProvidedService } from '../provided-service';

/** The same broker line as the Maven path and docker-compose.yml (kafkajs needs 3.x). */
export const KAFKA_IMAGE = process.env['POLICYGEN_KAFKA_IMAGE'] ?? 'apache/kafka:3.9.1';
export const REDIS_IMAGE = process.env['POLICYGEN_REDIS_IMAGE'] ?? 'redis:7.4-alpine';
export const POSTGRES_IMAGE = process.env['POLICYGEN_POSTGRES_IMAGE'] ?? 'postgres:16-alpine';

/** Whether a Docker (or compatible) engine answers, as testcontainers finds one. */
export function dockerEngineAnswers(timeoutMs = 15_000): Promise<boolean> {
  return orAfter(
    getContainerRuntimeClient().then(
      () => true,
      () => false,
    ),
    timeoutMs,
    false,
  );
}

/**
 * Kafka in KRaft mode from the apache/kafka image. The host port is chosen up front and mapped
 * one-to-one, so the listener the broker advertises is the address the tests dial.
 */
export async function startKafkaContainer(): Promise<ProvidedService<readonly string[]>> {
  const port = await freePort();
  const container = await new GenericContainer(KAFKA_IMAGE)
    .withExposedPorts({ container: port, host: port })
    .withEnvironment({
      KAFKA_NODE_ID: '1',
      KAFKA_PROCESS_ROLES: 'broker,controller',
      KAFKA_LISTENERS: `PLAINTEXT://0.0.0.0:${port},CONTROLLER://localhost:9093`,
      KAFKA_ADVERTISED_LISTENERS: `PLAINTEXT://127.0.0.1:${port}`,
      KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
      KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: 'CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
      KAFKA_CONTROLLER_QUORUM_VOTERS: '1@localhost:9093',
      KAFKA_AUTO_CREATE_TOPICS_ENABLE: 'false',
      KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
      KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
      KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
      KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
    })
    .withWaitStrategy(Wait.forLogMessage(/Kafka Server started/))
    .withStartupTimeout(120_000)
    .start();
  const brokers = [`127.0.0.1:${port}`];
  return {
    endpoint: brokers,
    description: `Kafka: container ${KAFKA_IMAGE} (KRaft) started by the harness at ${brokers.join(',')}`,
    stop: async () => {
      await container.stop();
    },
  };
}

export async function startRedisContainer(): Promise<ProvidedService<string>> {
  const container = await new RedisContainer(REDIS_IMAGE).start();
  const url = container.getConnectionUrl();
  return {
    endpoint: url,
    description: `Redis: container ${REDIS_IMAGE} started by the harness at ${url}`,
    stop: async () => {
      await container.stop();
    },
  };
}

export async function startPostgresContainer(): Promise<ProvidedService<string>> {
  const container = await new PostgreSqlContainer(POSTGRES_IMAGE).start();
  const url = container.getConnectionUri();
  return {
    endpoint: url,
    description: `Postgres: container ${POSTGRES_IMAGE} started by the harness`,
    stop: async () => {
      await container.stop();
    },
  };
}
