import type { ManagedProcess } from './managed-process';
import { orAfter } from './net';
import { InfrastructureError } from './provided-service';

export interface ReadinessOptions {
  /** What is being started, for messages ("Kafka broker (local, KRaft)"). */
  readonly what: string;
  readonly timeoutMs: number;
  readonly pollIntervalMs?: number;
}

/**
 * Polls `probe` until it answers true. Fails at once, with the process's log, when the process
 * exits, and after `timeoutMs` at the latest: a start-up never hangs the test run.
 */
export async function waitUntilReady(
  child: ManagedProcess,
  probe: () => Promise<boolean>,
  options: ReadinessOptions,
): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  const exited = child.exited.then(() => false);
  for (;;) {
    const remaining = deadline - Date.now();
    if (!child.running) break;
    if (remaining <= 0) {
      await child.stop();
      throw new InfrastructureError(
        `${options.what} did not become ready within ${options.timeoutMs / 1000} s.\n` + logSection(child),
      );
    }
    const ready = await orAfter(Promise.race([probe().catch(() => false), exited]), remaining, false);
    if (ready && child.running) return;
    if (!child.running) break;
    await orAfter(exited, options.pollIntervalMs ?? 250, false);
  }
  throw new InfrastructureError(
    `${options.what} ${child.describeExit()} before it was ready.\n` + logSection(child),
  );
}

function logSection(child: ManagedProcess): string {
  return `--- last lines of ${child.logFile} ---\n${child.logTail()}\n---`;
}
