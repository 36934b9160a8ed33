import type { InfrastructurePlan, MachineCapabilities, ServicePlan } from './plan';
import { INFRA_ENV, planInfrastructure } from './plan';
import type { ProvidedService } from './provided-service';
import { InfrastructureError } from './provided-service';
import {
  dockerEngineAnswers,
  startKafkaContainer,
  startPostgresContainer,
  startRedisContainer,
} from './providers/containers';
import { launchLocalKafka, localKafkaMissing } from './providers/local-kafka';
import {
  createDatabaseOnSharedPostgres,
  privatePostgresMissing,
  sharedPostgresAnswers,
  startPrivatePostgres,
} from './providers/local-postgres';
import { localRedisMissing, startLocalRedis } from './providers/local-redis';
import type { TestInfrastructure } from './test-infrastructure';

export interface RunningInfrastructure {
  readonly infrastructure: TestInfrastructure;
  /** One line per service: where it came from. */
  readonly descriptions: readonly string[];
  stop(): Promise<void>;
}

export async function probeMachine(
  env: Readonly<Record<string, string | undefined>>,
): Promise<MachineCapabilities> {
  const allFromEnv = Boolean(env[INFRA_ENV.kafka] && env[INFRA_ENV.redis] && env[INFRA_ENV.database]);
  const probeDocker = !allFromEnv && env[INFRA_ENV.mode] !== 'local';
  return {
    dockerEngine: probeDocker ? await dockerEngineAnswers() : false,
    localKafkaMissing: localKafkaMissing(),
    localRedisMissing: localRedisMissing(),
    sharedPostgres: await sharedPostgresAnswers(),
    privatePostgresMissing: privatePostgresMissing(),
  };
}

/** Plans and starts Kafka, Redis and Postgres; on any failure, stops what did start and throws. */
export async function startTestInfrastructure(
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<RunningInfrastructure> {
  const plan = planInfrastructure(env, await probeMachine(env));
  const [kafka, redis, postgres] = await Promise.allSettled([
    startKafka(plan),
    startRedis(plan),
    startPostgres(plan),
  ]);
  const results = [kafka, redis, postgres];
  const services = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const stop = async (): Promise<void> => {
    await Promise.allSettled(services.map((service) => service.stop()));
  };
  if (kafka.status === 'rejected' || redis.status === 'rejected' || postgres.status === 'rejected') {
    await stop();
    const failures = results.flatMap((result) =>
      result.status === 'rejected'
        ? [result.reason instanceof Error ? result.reason.message : String(result.reason)]
        : [],
    );
    throw new InfrastructureError(`Could not start the test infrastructure:\n${failures.join('\n')}`);
  }
  return {
    infrastructure: {
      kafkaBrokers: [...kafka.value.endpoint],
      redisUrl: redis.value.endpoint,
      databaseUrl: postgres.value.endpoint,
    },
    descriptions: services.map((service) => service.description),
    stop,
  };
}

function fromEnvironment<T>(
  what: string,
  plan: ServicePlan & { source: 'environment' },
  endpoint: T,
): ProvidedService<T> {
  return {
    endpoint,
    description: `${what}: existing service from the environment (${plan.value})`,
    stop: async () => undefined,
  };
}

async function startKafka(plan: InfrastructurePlan): Promise<ProvidedService<readonly string[]>> {
  const kafka = plan.kafka;
  if (kafka.source === 'environment') {
    return fromEnvironment(
      'Kafka',
      kafka,
      kafka.value.split(',').map((broker) => broker.trim()),
    );
  }
  if (kafka.source === 'containers') return startKafkaContainer();
  const timeout = Number(process.env['KAFKA_START_TIMEOUT_MS'] ?? 90_000);
  return (await launchLocalKafka({ startTimeoutMs: timeout })).ready;
}

async function startRedis(plan: InfrastructurePlan): Promise<ProvidedService<string>> {
  const redis = plan.redis;
  if (redis.source === 'environment') return fromEnvironment('Redis', redis, redis.value);
  if (redis.source === 'containers') return startRedisContainer();
  return startLocalRedis();
}

async function startPostgres(plan: InfrastructurePlan): Promise<ProvidedService<string>> {
  const postgres = plan.postgres;
  if (postgres.source === 'environment') return fromEnvironment('Postgres', postgres, postgres.value);
  if (postgres.source === 'containers') return startPostgresContainer();
  return postgres.variant === 'shared' ? createDatabaseOnSharedPostgres() : startPrivatePostgres();
}
