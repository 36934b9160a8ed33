import { z } from 'zod';
import { topicsFor } from '@policygen/events';
import { env } from '@policygen/service-kit';
import { DEFAULT_BODY_LIMIT_BYTES, DEFAULT_OUTBOX_WINDOW_MS } from '../app/config-service-options';

/** Under Kafka's default 1 MiB message limit. */
const DEFAULT_MAX_EVENT_BYTES = 900 * 1024;

/** The config service's settings, from its environment (`readEnvironment` names what is wrong). */
export const configServiceEnvironment = z.object({
  DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, 'a postgres:// URL'),
  KAFKA_BROKERS: env.brokers(),
  HOST: env.host('0.0.0.0'),
  PORT: env.port(3001),
  LOG_LEVEL: env.logLevel(),
  POLICYGEN_DB_SCHEMA: z.string().min(1).default('public'),
  POLICYGEN_MAX_BODY_BYTES: z.coerce.number().int().positive().default(DEFAULT_BODY_LIMIT_BYTES),
  POLICYGEN_MAX_EVENT_BYTES: z.coerce.number().int().positive().default(DEFAULT_MAX_EVENT_BYTES),
  POLICYGEN_TOPIC_NAMESPACE: z
    .string()
    .optional()
    .superRefine((namespace, context) => {
      try {
        topicsFor(namespace);
      } catch (error) {
        context.addIssue({ code: 'custom', message: (error as Error).message });
      }
    }),
  /** Signs the nodes' tokens, with the distribution-service: no deployment runs without one. */
  POLICYGEN_NODE_TOKEN_SECRET: env.secret(),
  /**
   * The bootstrap admin's API token. Required until an admin token has been created through the API
   * (the service refuses to start without either: nobody could manage it).
   */
  POLICYGEN_ADMIN_TOKEN: env.secret().optional(),
  /** The reader's token the generator and the distribution-service present; optional. */
  POLICYGEN_SERVICE_TOKEN: env.secret().optional(),
  /** Node tokens issued per minute to one client address at most. */
  POLICYGEN_TOKEN_RATE_PER_MINUTE: env.positiveInteger().default(600),
  /**
   * The outbox is sent at most once per this many ms while commits come faster (0: after each
   * commit): they then share one send, and downstream one generation cycle and one relay page.
   */
  POLICYGEN_OUTBOX_WINDOW_MS: z.coerce.number().int().min(0).max(10_000).default(DEFAULT_OUTBOX_WINDOW_MS),
  POLICYGEN_PARTITIONS: z.coerce.number().int().min(1).default(12),
  POLICYGEN_GENERATOR_GROUP: z.string().min(1).default('policygen-generator'),
});
