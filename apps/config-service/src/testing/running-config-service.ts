import pino from 'pino';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Pool } from 'pg';
import { createKafkaMessaging } from '@policygen/messaging';
import type { Messaging } from '@policygen/messaging';
import type { TopicNames } from '@policygen/events';
import { PostgresApiTokenStore, PostgresConfigStore } from '@policygen/store';
import { getTestInfrastructure } from '@policygen/testing-infra';
import { createConfigServiceApp } from '../app/create-config-service-app';
import { ApiClient } from './api-client';

/** A config service started in-process on the harness's Postgres and Kafka, on a free port. */
export interface RunningConfigService {
  readonly app: NestExpressApplication;
  readonly api: ApiClient;
  stop(): Promise<void>;
}

export interface StartOptions {
  readonly schema: string;
  readonly bodyLimitBytes?: number;
  readonly messaging?: Messaging;
  readonly publishIntervalMs?: number;
  readonly followIntervalMs?: number;
  readonly nodeTokenSecret?: string;
  readonly tokenRequestsPerMinute?: number;
  /** `POLICYGEN_SERVICE_TOKEN`'s counterpart: a reader's token given by the environment. */
  readonly serviceToken?: string;
  /** Where the service logs (default: errors only, to stdout). */
  readonly logger?: pino.Logger;
  /** The deployment's topics, e.g. of a namespace of the suite's own (default: `TOPICS`). */
  readonly topics?: TopicNames;
}

export function testMessaging(clientId = 'config-service-it'): Messaging {
  return createKafkaMessaging({
    brokers: getTestInfrastructure().kafkaBrokers,
    clientId,
    log: () => undefined,
  });
}

export async function startConfigService(options: StartOptions): Promise<RunningConfigService> {
  const store = new PostgresConfigStore({
    connectionString: getTestInfrastructure().databaseUrl,
    schema: options.schema,
  });
  // The client's token: the bootstrap admin's, which the tests use to create the others.
  const adminToken = `test-admin-${randomBytes(16).toString('hex')}`;
  const app = await createConfigServiceApp({
    store,
    apiTokens: new PostgresApiTokenStore({
      connectionString: getTestInfrastructure().databaseUrl,
      schema: options.schema,
    }),
    environmentTokens: { admin: adminToken, services: options.serviceToken ?? null },
    messaging: options.messaging ?? testMessaging(),
    logger: options.logger ?? pino({ level: 'error' }),
    ...(options.topics === undefined
      ? {}
      : { topics: options.topics, changeTopic: options.topics.configChanges }),
    ...(options.bodyLimitBytes === undefined ? {} : { bodyLimitBytes: options.bodyLimitBytes }),
    ...(options.publishIntervalMs === undefined ? {} : { publishIntervalMs: options.publishIntervalMs }),
    ...(options.followIntervalMs === undefined ? {} : { followIntervalMs: options.followIntervalMs }),
    ...(options.nodeTokenSecret === undefined ? {} : { nodeTokenSecret: options.nodeTokenSecret }),
    ...(options.tokenRequestsPerMinute === undefined
      ? {}
      : { tokenRequestsPerMinute: options.tokenRequestsPerMinute }),
  });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  return { app, api: new ApiClient(`http://127.0.0.1:${port}`, adminToken), stop: () => app.close() };
}

/** A fresh schema name per suite: suites run in parallel on one database. */
export function uniqueSchema(prefix: string): string {
  return `${prefix}_${randomBytes(6).toString('hex')}`;
}

export async function dropSchema(schema: string): Promise<void> {
  const pool = new Pool({ connectionString: getTestInfrastructure().databaseUrl });
  try {
    await pool.query(`drop schema if exists "${schema}" cascade`);
  } finally {
    await pool.end();
  }
}

/**
 * A config service for the enclosing `describe`, in a schema of its own: started before its tests,
 * stopped and its schema dropped after them. `api` is ready inside the tests and later hooks.
 */
export function configServiceForSuite(
  schemaPrefix: string,
  options: Omit<StartOptions, 'schema'> = {},
): { readonly api: ApiClient; readonly app: NestExpressApplication } {
  const schema = uniqueSchema(schemaPrefix);
  let service: RunningConfigService | undefined;
  beforeAll(async () => {
    service = await startConfigService({ ...options, schema });
  });
  afterAll(async () => {
    await service?.stop();
    await dropSchema(schema);
  });
  return {
    get api(): ApiClient {
      if (!service) throw new Error('the config service is not started yet');
      return service.api;
    },
    get app(): NestExpressApplication {
      if (!service) throw new Error('the config service is not started yet');
      return service.app;
    },
  };
}
