import { topicsFor } from '@policygen/events';
import { DEFAULT_BODY_LIMIT_BYTES } from '../app/config-service-options';

/** The process's settings, from its environment. */
export interface ServiceConfig {
  readonly databaseUrl: string;
  readonly kafkaBrokers: readonly string[];
  /** The interface to listen on (`HOST`); null for every interface. */
  readonly host: string | null;
  readonly port: number;
  readonly schema: string;
  readonly bodyLimitBytes: number;
  /** The change-log topic, in the deployment's namespace (`POLICYGEN_TOPIC_NAMESPACE`). */
  readonly changeTopic: string;
  /** The largest change set a change event carries; a larger one is left out (the export has it). */
  readonly maxEventBytes: number;
  /** Signs the nodes' tokens (`POLICYGEN_NODE_TOKEN_SECRET`); without it, none is issued. */
  readonly nodeTokenSecret: string | null;
}

export class ServiceConfigError extends Error {
  override readonly name = 'ServiceConfigError';
}

const DEFAULT_PORT = 3001;
/** Under Kafka's default 1 MiB message limit. */
const DEFAULT_MAX_EVENT_BYTES = 900 * 1024;

/** Reads the environment; throws one error naming every variable that is missing or wrong. */
export function readServiceConfig(env: Readonly<Record<string, string | undefined>>): ServiceConfig {
  const problems: string[] = [];
  const databaseUrl = env['DATABASE_URL']?.trim() ?? '';
  if (databaseUrl === '') problems.push('DATABASE_URL is required (e.g. postgres://user@host:5432/db)');
  const kafkaBrokers = (env['KAFKA_BROKERS'] ?? '')
    .split(',')
    .map((broker) => broker.trim())
    .filter((broker) => broker !== '');
  if (kafkaBrokers.length === 0) problems.push('KAFKA_BROKERS is required (host:port, comma-separated)');
  const host = env['HOST']?.trim() || null;
  const port = integer(env, 'PORT', DEFAULT_PORT, 0, 65_535, problems);
  const bodyLimitBytes = integer(
    env,
    'POLICYGEN_MAX_BODY_BYTES',
    DEFAULT_BODY_LIMIT_BYTES,
    1,
    Number.MAX_SAFE_INTEGER,
    problems,
  );
  const maxEventBytes = integer(
    env,
    'POLICYGEN_MAX_EVENT_BYTES',
    DEFAULT_MAX_EVENT_BYTES,
    1,
    Number.MAX_SAFE_INTEGER,
    problems,
  );
  const schema = env['POLICYGEN_DB_SCHEMA']?.trim() || 'public';
  let changeTopic = '';
  try {
    changeTopic = topicsFor(env['POLICYGEN_TOPIC_NAMESPACE']?.trim() || undefined).configChanges;
  } catch (error) {
    problems.push(`POLICYGEN_TOPIC_NAMESPACE: ${(error as Error).message}`);
  }
  const nodeTokenSecret = env['POLICYGEN_NODE_TOKEN_SECRET'] || null;
  if (nodeTokenSecret !== null && nodeTokenSecret.length < 16)
    problems.push('POLICYGEN_NODE_TOKEN_SECRET must be at least 16 characters');
  if (problems.length > 0) throw new ServiceConfigError(`invalid configuration: ${problems.join('; ')}`);
  return {
    databaseUrl,
    kafkaBrokers,
    host,
    port,
    schema,
    bodyLimitBytes,
    changeTopic,
    maxEventBytes,
    nodeTokenSecret,
  };
}

function integer(
  env: Readonly<Record<string, string | undefined>>,
  name: string,
  fallback: number,
  min: number,
  max: number,
  problems: string[],
): number {
  const text = env[name]?.trim();
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max) {
    problems.push(`${name} must be an integer from ${min} to ${max}, not ${JSON.stringify(text)}`);
    return fallback;
  }
  return value;
}
