import { sleep } from './net';

/** Waits until `condition` holds, polling; fails with `what` after timeoutMs instead of hanging. */
export async function eventually(
  condition: () => boolean | Promise<boolean>,
  options: { what: string; timeoutMs?: number; intervalMs?: number },
): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${options.what}`);
    await sleep(options.intervalMs ?? 50);
  }
}
