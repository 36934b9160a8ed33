import { randomUUID } from 'node:crypto';
import type { BundleEvent } from '../contract/schemas';
import { TOPICS } from '../contract/topics';
import type { SdkLogger } from '../consumer/logger';
import { EventConsumer } from '../consumer/event-consumer';
import type { Connection } from '../connection';
import { transportFor } from '../connection';

export interface ReadLatestBundlesOptions {
  /** Give up after this long (default 5 min). */
  readonly timeoutMs?: number;
  readonly logger?: SdkLogger;
}

/**
 * Every node's current bundle, read from the compacted node-bundles topic from its start up to
 * where it ended when the read began: the state a consumer that starts late builds on. Nodes whose
 * last record is their `node.deleted` (they left the fleet) are absent. It reads in a throw-away
 * group and commits nothing. A consumer that follows the topic from its start in a group of its
 * own gets the same state first, then what comes next, without this read.
 */
export async function readLatestBundles(
  connection: Connection,
  options: ReadLatestBundlesOptions = {},
): Promise<Map<string, BundleEvent>> {
  const bundles = new Map<string, BundleEvent>();
  const consumer = new EventConsumer({
    transport: transportFor(connection, options.logger),
    groupId: `policygen-sdk-latest-${randomUUID()}`,
    ...(connection.namespace ? { namespace: connection.namespace } : {}),
    fromBeginning: true,
    ephemeral: true,
    // One key at a time per partition keeps the last record per node the one that wins.
    concurrency: 1,
    retry: { attempts: 1 },
    ...(options.logger ? { logger: options.logger } : {}),
  });
  consumer.subscribe(TOPICS.nodeBundles, (event) => {
    if (event.type === 'node.deleted') bundles.delete(event.nodeId);
    else bundles.set(event.nodeId, event);
  });
  await consumer.start();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      consumer.caughtUp(TOPICS.nodeBundles),
      new Promise((_, reject) => {
        timer = setTimeout(
          () =>
            reject(new Error(`the latest bundles were not read within ${options.timeoutMs ?? 300_000} ms`)),
          options.timeoutMs ?? 300_000,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
    await consumer.stop();
  }
  return bundles;
}
