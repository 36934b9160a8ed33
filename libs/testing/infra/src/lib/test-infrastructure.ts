import { INFRA_ENV } from './plan';

/** The real services a test suite talks to. */
export interface TestInfrastructure {
  readonly kafkaBrokers: readonly string[];
  readonly redisUrl: string;
  readonly databaseUrl: string;
}

/**
 * The infrastructure of this test run, as the harness's jest global setup published it (or as the
 * environment gave it). Throws, never returns a stand-in: an integration test without its services
 * fails loudly.
 */
export function getTestInfrastructure(
  env: Readonly<Record<string, string | undefined>> = process.env,
): TestInfrastructure {
  const kafka = env[INFRA_ENV.kafka];
  const redisUrl = env[INFRA_ENV.redis];
  const databaseUrl = env[INFRA_ENV.database];
  if (!kafka || !redisUrl || !databaseUrl) {
    const missing = [
      [INFRA_ENV.kafka, kafka],
      [INFRA_ENV.redis, redisUrl],
      [INFRA_ENV.database, databaseUrl],
    ].flatMap(([name, value]) => (value ? [] : [name]));
    throw new Error(
      `No test infrastructure: ${missing.join(', ')} not set. Run the suite through jest with the harness's ` +
        `globalSetup (libs/testing/infra/src/global-setup.ts), e.g. \`npx jest\` from the repository root.`,
    );
  }
  return { kafkaBrokers: kafka.split(',').map((broker) => broker.trim()), redisUrl, databaseUrl };
}
