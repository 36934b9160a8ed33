import type { Registry } from 'prom-client';
import type { ExpressAdapter } from '@nestjs/platform-express';
import type { TopicNames } from '@policygen/events';
import type { Messaging } from '@policygen/messaging';
import type { ReadinessCheck } from '@policygen/service-kit';
import type { Logger } from 'pino';
import type { ApiTokenStore, ConfigStore } from '@policygen/store';
import type { EnvironmentTokens } from '../api-tokens/api-token-registry';

/** What the config service is built from; the app owns the store from then on and closes it. */
export interface ConfigServiceOptions {
  readonly store: ConfigStore;
  readonly messaging: Messaging;
  /** Largest request body accepted, in bytes (default 64 MiB). */
  readonly bodyLimitBytes?: number;
  /**
   * The change-log topic, which must be the one the store's outbox writes to (default
   * `policygen.config.changes.v1`; a namespaced name from `topicsFor`).
   */
  readonly changeTopic?: string;
  /** How often outbox messages still unpublished are retried, in ms (default 1000). */
  readonly publishIntervalMs?: number;
  /**
   * The outbox is sent at most once per this many ms while commits come faster than that (default
   * 150; 0 sends after each commit): the commits of a window share one send to the bus and,
   * downstream, one generation cycle, one feed append and one relay page, for at most a window of lag.
   */
  readonly outboxWindowMs?: number;
  /** How often commits made by other instances are caught up with, in ms (default 1000). */
  readonly followIntervalMs?: number;
  /** Where it logs: JSON lines, every request among them (default: a logger of its own at `info`). */
  readonly logger?: Logger;
  /**
   * The topics of the deployment's namespace: the change log it writes, the pipeline summaries it
   * follows for the pipeline's status (default: `TOPICS`).
   */
  readonly topics?: TopicNames;
  /** Partitions of the event topics it creates if they do not exist yet (default 12). */
  readonly partitions?: number;
  /** The generators' consumer group, whose members the pipeline status lists (default `policygen-generator`). */
  readonly generatorGroup?: string;
  /** Process-wide metrics (default metrics) only once per process: the embedded mode runs several services. */
  readonly defaultMetrics?: boolean;
  /** The registry its `/metrics` serves (default: its own): the embedded mode adds the event stream's. */
  readonly registry?: Registry;
  /** More checks for `/health/ready`, read at every probe: the embedded mode's other services. */
  readonly extraReadiness?: () => readonly ReadinessCheck[];
  /** Where API tokens are kept (default: in memory); the app closes it with the store. */
  readonly apiTokens?: ApiTokenStore;
  /**
   * The tokens the environment gives (`POLICYGEN_ADMIN_TOKEN`, `POLICYGEN_SERVICE_TOKEN`): without
   * an admin's, only tokens already created can call the API.
   */
  readonly environmentTokens?: EnvironmentTokens;
  /** Signs node tokens (`POST /api/v1/nodes/{id}/token`); without it, none is issued (503). */
  readonly nodeTokenSecret?: string | null;
  /** Node tokens issued per minute to one client address at most (default 600); then 429. */
  readonly tokenRequestsPerMinute?: number;
  /** The Express app to serve on (default: one of its own), e.g. mounted beside other services. */
  readonly httpAdapter?: ExpressAdapter;
}

export const DEFAULT_BODY_LIMIT_BYTES = 64 * 1024 * 1024;
export const DEFAULT_OUTBOX_WINDOW_MS = 150;

/** The background timings, as the services receive them. */
export interface ServiceTimings {
  readonly publishIntervalMs: number;
  readonly outboxWindowMs: number;
  readonly followIntervalMs: number;
}
