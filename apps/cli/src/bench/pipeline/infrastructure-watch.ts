import { Pool } from 'pg';
import type { TestInfrastructure } from '@policygen/testing-infra';
import type { ProcessSampler } from './process-sampler';
import { commandLineOf, findListeningProcess } from './process-sampler';

export const KAFKA = 'kafka';
export const REDIS = 'redis';
export const POSTGRES = 'postgres (our database)';

/** How often the database's backends are listed again: its clients' pools open and close connections. */
const BACKEND_REFRESH_MS = 2_000;
const LOCAL_HOSTS = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

/**
 * Has the sampler watch the infrastructure's processes where they are local and this user can see
 * them: the Kafka broker and redis-server by the port they listen on, and Postgres's backends
 * serving our database (it is ours alone), listed again every few seconds.
 */
export class InfrastructureWatch {
  /** What is watched, and why anything is not. */
  readonly watched: string[] = [];
  readonly notWatched: string[] = [];
  private pool: Pool | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly infrastructure: TestInfrastructure,
    private readonly sampler: ProcessSampler,
  ) {}

  async start(): Promise<void> {
    const broker = this.infrastructure.kafkaBrokers[0] ?? '';
    this.watchListener(
      KAFKA,
      broker.slice(0, broker.lastIndexOf(':')),
      Number(broker.slice(broker.lastIndexOf(':') + 1)),
      /java|kafka/,
    );
    const redis = new URL(this.infrastructure.redisUrl);
    this.watchListener(REDIS, redis.hostname, Number(redis.port || 6379), /redis-server/);
    const database = new URL(this.infrastructure.databaseUrl);
    if (!LOCAL_HOSTS.has(database.hostname) && database.hostname !== '') {
      this.notWatched.push(`${POSTGRES}: on ${database.hostname}, not this machine`);
      return;
    }
    this.pool = new Pool({ connectionString: this.infrastructure.databaseUrl, max: 1 });
    this.pool.on('error', () => undefined);
    const found = await this.refreshBackends();
    if (found) this.watched.push(POSTGRES);
    else {
      this.notWatched.push(`${POSTGRES}: no backend of it found among this machine's processes`);
      await this.stop();
      return;
    }
    this.timer = setInterval(() => void this.refreshBackends(), BACKEND_REFRESH_MS);
    this.timer.unref();
  }

  /** Lists the backends once more, so that a phase's end sees those opened meanwhile. */
  async refresh(): Promise<void> {
    if (this.pool) await this.refreshBackends();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    const pool = this.pool;
    this.pool = undefined;
    await pool?.end().catch(() => undefined);
  }

  private watchListener(name: string, host: string, port: number, command: RegExp): void {
    if (!LOCAL_HOSTS.has(host) || !Number.isInteger(port)) {
      this.notWatched.push(`${name}: on ${host}, not this machine`);
      return;
    }
    const pid = findListeningProcess(port);
    const commandLine = pid === undefined ? '' : commandLineOf(pid);
    if (pid === undefined || !command.test(commandLine)) {
      // A container's port is held by its proxy, whose CPU is not the server's.
      this.notWatched.push(
        `${name}: ${pid === undefined ? `no process of this user listens on ${port}` : `port ${port} is held by ${commandLine.slice(0, 60)}`}`,
      );
      return;
    }
    this.sampler.watch(name, pid);
    this.watched.push(name);
  }

  private async refreshBackends(): Promise<boolean> {
    const pool = this.pool;
    if (!pool) return false;
    try {
      const rows = await pool.query<{ pid: number }>(
        'select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
      );
      let found = false;
      for (const { pid } of rows.rows)
        if (/postgres/.test(commandLineOf(pid))) {
          this.sampler.watch(POSTGRES, pid);
          found = true;
        }
      return found;
    } catch {
      return false;
    }
  }
}
