import { INFRA_ENV } from './plan';
import type { RunningInfrastructure } from './start-infrastructure';
import { startTestInfrastructure } from './start-infrastructure';

/**
 * Jest runs the root config's global setup and each project's; they all land here, in jest's main
 * process. The first call starts the services, later ones only count themselves, and the services
 * stop when the last teardown has run.
 */
interface HarnessState {
  running: RunningInfrastructure;
  users: number;
}

const STATE_KEY = Symbol.for('policygen.testing-infra.state');
type GlobalWithState = typeof globalThis & { [STATE_KEY]?: HarnessState };

function say(line: string): void {
  process.stderr.write(`[test-infra] ${line}\n`);
}

export async function setUpTestInfrastructure(): Promise<void> {
  const global = globalThis as GlobalWithState;
  const existing = global[STATE_KEY];
  if (existing) {
    existing.users += 1;
    return;
  }
  const began = Date.now();
  say('providing Kafka, Redis and Postgres for this test run...');
  const running = await startTestInfrastructure(process.env);
  // Jest's workers are forked after global setup and inherit these.
  process.env[INFRA_ENV.kafka] = running.infrastructure.kafkaBrokers.join(',');
  process.env[INFRA_ENV.redis] = running.infrastructure.redisUrl;
  process.env[INFRA_ENV.database] = running.infrastructure.databaseUrl;
  global[STATE_KEY] = { running, users: 1 };
  for (const line of running.descriptions) say(line);
  say(`ready in ${((Date.now() - began) / 1000).toFixed(1)} s`);
}

export async function tearDownTestInfrastructure(): Promise<void> {
  const global = globalThis as GlobalWithState;
  const state = global[STATE_KEY];
  if (!state) return;
  state.users -= 1;
  if (state.users > 0) return;
  delete global[STATE_KEY];
  await state.running.stop();
  say('stopped every service the harness started');
}
