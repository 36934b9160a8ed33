import { rmSync } from 'node:fs';
import type { ManagedProcessOptions } from './managed-process';
import { ManagedProcess } from './managed-process';
import { waitUntilReady } from './wait-until-ready';

export interface ServerRecipe {
  /** What it is, for messages ("Kafka broker (local, KRaft)"). */
  readonly what: string;
  readonly process: ManagedProcessOptions;
  /** True once the server answers. */
  readonly probe: () => Promise<boolean>;
  readonly startTimeoutMs: number;
  /** The folder holding its data and log: removed by close(), kept across restarts. */
  readonly workDir: string;
  /**
   * How long a start may be tried again when the server exits at once: after a SIGKILL, what the
   * killed one left (Postgres's children, which live in sessions of their own, and its lock file)
   * takes a moment to go.
   */
  readonly restartGraceMs?: number;
}

/**
 * A server the harness started that tests may stop, kill and start again on the same port and
 * the same data, as an operator's restart or a crash would: the fault injection of the chaos tests.
 */
export class RestartableServer {
  private current: ManagedProcess | undefined;
  private closed = false;

  constructor(private readonly recipe: ServerRecipe) {}

  get what(): string {
    return this.recipe.what;
  }

  get running(): boolean {
    return this.current?.running === true;
  }

  get process(): ManagedProcess | undefined {
    return this.current;
  }

  /** Starts it (again) and resolves once it answers; rejects with its log if it dies or times out. */
  async start(): Promise<void> {
    if (this.closed) throw new Error(`${this.recipe.what} is closed`);
    if (this.running) return;
    const graceEnds = Date.now() + (this.recipe.restartGraceMs ?? 0);
    for (;;) {
      this.current = ManagedProcess.start(this.recipe.process);
      try {
        await waitUntilReady(this.current, this.recipe.probe, {
          what: this.recipe.what,
          timeoutMs: this.recipe.startTimeoutMs,
        });
        return;
      } catch (error) {
        if (this.current.running || Date.now() >= graceEnds) throw error;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
  }

  /** Asks it to stop, as an operator would. */
  async stop(): Promise<void> {
    await this.current?.stop();
  }

  /** Kills it at once (SIGKILL), as a crash would. */
  async kill(): Promise<void> {
    const current = this.current;
    if (!current?.running) return;
    current.kill();
    await current.exited;
  }

  /** Stops it for good and removes its data. */
  async close(): Promise<void> {
    this.closed = true;
    await this.stop();
    rmSync(this.recipe.workDir, { recursive: true, force: true });
  }
}

/** Starts a server from its recipe; if it does not come up, removes its data and rethrows. */
export async function startServer(recipe: ServerRecipe): Promise<RestartableServer> {
  const server = new RestartableServer(recipe);
  try {
    await server.start();
  } catch (error) {
    await server.close();
    throw error;
  }
  return server;
}
