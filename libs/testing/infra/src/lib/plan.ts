import { InfrastructureError } from './provided-service';

/** Names of the variables that point a test run at existing services. */
export const INFRA_ENV = {
  kafka: 'KAFKA_BROKERS',
  redis: 'REDIS_URL',
  database: 'DATABASE_URL',
  /** `local` skips the Docker probe; `containers` insists on Docker; unset tries both, in that order. */
  mode: 'POLICYGEN_TEST_INFRA',
} as const;

export type ServiceName = 'kafka' | 'redis' | 'postgres';

export type ServicePlan =
  | { readonly source: 'environment'; readonly value: string }
  | { readonly source: 'containers' }
  | { readonly source: 'local'; readonly variant?: 'shared' | 'private' };

export type InfrastructurePlan = Readonly<Record<ServiceName, ServicePlan>>;

/** What the machine offers; each `...Missing` is undefined when that local path works, else why not. */
export interface MachineCapabilities {
  readonly dockerEngine: boolean;
  readonly localKafkaMissing: string | undefined;
  readonly localRedisMissing: string | undefined;
  readonly sharedPostgres: boolean;
  readonly privatePostgresMissing: string | undefined;
}

const INSTALL_HINTS: Readonly<Record<ServiceName, string>> = {
  kafka: 'Java 17 and Maven (apt-get install -y openjdk-17-jre-headless maven)',
  redis: 'redis-server (apt-get install -y redis-server)',
  postgres:
    'PostgreSQL answering on 127.0.0.1:5432 with trust auth, or its server binaries (apt-get install -y postgresql)',
};

const ENV_OF: Readonly<Record<ServiceName, string>> = {
  kafka: INFRA_ENV.kafka,
  redis: INFRA_ENV.redis,
  postgres: INFRA_ENV.database,
};

/**
 * Decides where each service comes from, in the order architecture.md gives: the environment,
 * then containers when a Docker engine answers, then processes the harness starts itself.
 * Throws one error naming every service that nothing can provide and what to install for it.
 */
export function planInfrastructure(
  env: Readonly<Record<string, string | undefined>>,
  machine: MachineCapabilities,
): InfrastructurePlan {
  const mode = env[INFRA_ENV.mode] ?? 'auto';
  if (!['auto', 'local', 'containers'].includes(mode)) {
    throw new InfrastructureError(
      `${INFRA_ENV.mode} must be "local" or "containers" (or unset), not "${mode}"`,
    );
  }
  const useContainers = mode !== 'local' && machine.dockerEngine;
  const problems: string[] = [];

  const plan = (
    service: ServiceName,
    localMissing: string | undefined,
    variant?: 'shared' | 'private',
  ): ServicePlan => {
    const value = env[ENV_OF[service]];
    if (value) return { source: 'environment', value };
    if (useContainers) return { source: 'containers' };
    if (mode === 'containers') {
      problems.push(`${service}: ${INFRA_ENV.mode}=containers, but no Docker engine answers`);
    } else if (localMissing === undefined) {
      return variant ? { source: 'local', variant } : { source: 'local' };
    } else {
      problems.push(
        `${service}: ${ENV_OF[service]} is not set, no Docker engine answers, and ${localMissing}. ` +
          `Install Docker, or ${INSTALL_HINTS[service]}, or set ${ENV_OF[service]}.`,
      );
    }
    return { source: 'local' };
  };

  const result: InfrastructurePlan = {
    kafka: plan('kafka', machine.localKafkaMissing),
    redis: plan('redis', machine.localRedisMissing),
    postgres: machine.sharedPostgres
      ? plan('postgres', undefined, 'shared')
      : plan('postgres', machine.privatePostgresMissing, 'private'),
  };
  if (problems.length > 0) {
    throw new InfrastructureError(
      `The integration tests need real Kafka, Redis and Postgres, and this machine cannot provide them:\n- ${problems.join('\n- ')}`,
    );
  }
  return result;
}
