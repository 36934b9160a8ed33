/**
 * How long opening a feed log and a blob directory takes, and the heap they hold, e.g. on the
 * root fresh-sync.ts makes (`--root-dir`):
 *
 *   npx esbuild apps/relay/src/bench/open-stores.ts --bundle --platform=node \
 *     --tsconfig=tsconfig.base.json --outfile=/tmp/open-stores.js --external:@nestjs/* --external:class-* \
 *   && node --expose-gc /tmp/open-stores.js DIR
 */
import { join } from 'node:path';
import { BlobDirectory, FeedLog } from '@policygen/distribution';

function heapMiB(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return Math.round(process.memoryUsage().heapUsed / 2 ** 20);
}

async function main(): Promise<void> {
  const directory = process.argv[2] ?? '.';
  const before = heapMiB();
  let started = Date.now();
  const log = await FeedLog.open(join(directory, 'feed.jsonl'));
  const logSeconds = (Date.now() - started) / 1000;
  const logHeap = heapMiB() - before;
  started = Date.now();
  const blobs = await BlobDirectory.open(join(directory, 'blobs'));
  const blobSeconds = (Date.now() - started) / 1000;
  const blobHeap = heapMiB() - before - logHeap;
  console.log(
    JSON.stringify({
      nodes: log.nodeCount,
      feedLog: { seconds: logSeconds, heapMiB: logHeap },
      blobs: { count: blobs.count, seconds: blobSeconds, heapMiB: blobHeap },
      rssMiB: Math.round(process.memoryUsage().rss / 2 ** 20),
      load: (await import('node:fs')).readFileSync('/proc/loadavg', 'utf8').trim(),
    }),
  );
  await log.close();
  blobs.close();
}

void main();
