/**
 * A fresh relay's full sync, measured: a self-made root (N synthetic bundles of 34 files in a
 * FeedLog and a BlobDirectory, served by the real FeedController over HTTP) and a real relay
 * process (`dist/relay/main.js`, so `npm run build` first) that syncs it from nothing.
 *
 *   node tools/build/bundle-cli.mjs && npx esbuild apps/relay/src/bench/fresh-sync.ts --bundle \
 *     --platform=node --tsconfig=tsconfig.base.json --outfile=/tmp/fresh-sync.js \
 *     --external:@nestjs/microservices --external:@nestjs/websockets/socket-module \
 *     --external:class-transformer --external:class-validator --external:@mikro-orm/core \
 *     --external:@nestjs/mongoose '--external:@nestjs/sequelize/*' '--external:@nestjs/typeorm/*' \
 *   && node /tmp/fresh-sync.js --nodes 10000 [--root-dir DIR] [--relay dist/relay/main.js] [--relay-cpu-prof DIR] [--relay-log FILE] [--steady BUNDLES] [--out FILE]
 *
 * The root's data is kept in --root-dir (made once per node count, reused after); the relay's
 * directory is new for each run. Prints the sync time, the requests the root answered by kind,
 * the relay's peak RSS and its own request counter. With `--steady N`, N changed bundles are then
 * appended to the root (and stay in its feed) and the time the relay takes to apply them is measured.
 */
import 'reflect-metadata';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { FeedEntry } from '@policygen/distribution';
import pino from 'pino';
import { Registry } from 'prom-client';
import {
  BLOB_DIRECTORY,
  BlobDirectory,
  CONFIRMATION_SINK,
  FEED_LOG,
  FeedController,
  FeedLog,
  RELAY_DIRECTORY,
  TopologyRelayDirectory,
  deploymentAuthenticator,
  issueRelayToken,
} from '@policygen/distribution';
import { ServiceShellModule } from '@policygen/service-kit';

const SHARED_FILES = 27;
const VARIANTS = 4;
const AT = '2026-11-24T10:00:00.000Z';
/** The bench root's secret: the relay's credential derives from it, as a deployment's does. */
const BENCH_SECRET = 'the-fresh-sync-bench-secret';

function option(name: string, fallback: string): string {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 ? (process.argv[index + 1] ?? fallback) : fallback;
}

function digestOf(content: string): string {
  return createHash('sha256').update(content).digest('hex');
}

/** A node's files: 7 of its own (as the real bundles' ~7.9 new blobs per node), 27 shared by a quarter of the fleet. */
function nodeFiles(index: number): { path: string; content: string }[] {
  const own = (label: string, size: number) =>
    `${label} of node-${index}\n${'x'.repeat(size)}\n${index.toString(36).repeat(8)}\n`;
  const files = [
    { path: 'policy-manifest.json', content: own('manifest', 3_000) },
    { path: 'rules/cfengine-community/rudder-promises-generated', content: `${1_700_000_000_000 + index}\n` },
    { path: 'rules/cfengine-community/promises.cf', content: own('promises', 4_000) },
    { path: 'rules/cfengine-community/policygen_system.cf', content: own('system', 2_000) },
    { path: 'rules/cfengine-community/properties.d/properties.json', content: own('properties', 500) },
    { path: 'rules/cfengine-community/rudder-directives.csv', content: own('directives', 1_000) },
    { path: 'rules/cfengine-community/config/node.conf', content: own('config', 800) },
  ];
  for (let shared = 0; shared < SHARED_FILES; shared++)
    files.push({
      path: `rules/cfengine-community/common/library-${String(shared).padStart(2, '0')}.cf`,
      content: `library ${shared} variant ${index % VARIANTS}\n${'y'.repeat(1_500)}\n`,
    });
  return files.sort((a, b) => (a.path < b.path ? -1 : 1));
}

async function makeRoot(directory: string, nodes: number): Promise<void> {
  const log = await FeedLog.open(join(directory, 'feed.jsonl'));
  const blobs = await BlobDirectory.open(join(directory, 'blobs'));
  for (let start = 0; start < nodes; start += 1_000) {
    const entries: FeedEntry[] = [];
    for (let index = start; index < Math.min(nodes, start + 1_000); index++) {
      const files = nodeFiles(index).map((file) => ({ ...file, sha256: digestOf(file.content) }));
      await Promise.all(
        files.map((file) => (blobs.has(file.sha256) ? null : blobs.write(file.sha256, file.content))),
      );
      entries.push({
        seq: index + 1,
        nodeId: `node-${index}`,
        path: ['root'],
        previousPath: [],
        revision: 1,
        bundle: {
          hash: `sha256:${digestOf(files.map((file) => file.sha256).join())}`,
          revision: 1,
          committedAt: AT,
          generatedAt: AT,
          distributedAt: AT,
          files: files.map(({ path, sha256 }) => ({ path, sha256 })),
          nodeKey: null,
        },
      });
    }
    await log.append(entries);
    process.stdout.write(`\rroot: ${Math.min(nodes, start + 1_000)}/${nodes} nodes written`);
  }
  process.stdout.write('\n');
  await log.close();
  writeFileSync(join(directory, 'complete'), String(nodes));
}

/**
 * After the sync: `count` new bundles (one file changed each, as a property change does), appended
 * to the root in pages of 1,000 as fast as it takes them; how long until the relay has them all.
 */
async function steadyLoad(
  log: FeedLog,
  blobs: BlobDirectory,
  count: number,
  relayCursor: () => Promise<number>,
): Promise<{ bundles: number; seconds: number; bundlesPerSecond: number } | null> {
  if (count <= 0) return null;
  const started = Date.now();
  const nodes = log.nodeCount;
  for (let start = 0; start < count; start += 1_000) {
    const entries: FeedEntry[] = [];
    for (let index = start; index < Math.min(count, start + 1_000); index++) {
      const latest = log.latest(`node-${index % nodes}`);
      if (!latest?.bundle) continue;
      const content = `properties of node-${index % nodes} at change ${index} ${started}\n`;
      const sha256 = digestOf(content);
      await blobs.write(sha256, content);
      const files = latest.bundle.files.map((file) =>
        file.path.endsWith('properties.json') ? { path: file.path, sha256 } : file,
      );
      entries.push({
        ...latest,
        seq: log.cursor + entries.length + 1,
        revision: latest.revision + 1,
        previousPath: latest.path,
        bundle: {
          ...latest.bundle,
          revision: latest.revision + 1,
          hash: `sha256:${digestOf(`${sha256}${index}`)}`,
          files,
        },
      });
    }
    await log.append(entries);
  }
  const target = log.cursor;
  while ((await relayCursor()) < target) await new Promise((wake) => setTimeout(wake, 20));
  const seconds = (Date.now() - started) / 1000;
  return { bundles: count, seconds, bundlesPerSecond: Math.round(count / seconds) };
}

async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => done(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

function peakRssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024);
}

async function main(): Promise<void> {
  const nodes = Number(option('nodes', '10000'));
  const rootDir = resolve(option('root-dir', join(tmpdir(), `policygen-bench-root-${nodes}`)));
  const out = option('out', '');
  if (!existsSync(join(rootDir, 'complete'))) {
    rmSync(rootDir, { recursive: true, force: true });
    const made = Date.now();
    await makeRoot(rootDir, nodes);
    console.log(`root made in ${((Date.now() - made) / 1000).toFixed(1)} s`);
  }
  const opened = Date.now();
  const log = await FeedLog.open(join(rootDir, 'feed.jsonl'));
  const blobs = await BlobDirectory.open(join(rootDir, 'blobs'));
  console.log(
    `root opened in ${((Date.now() - opened) / 1000).toFixed(1)} s: ${log.nodeCount} nodes, ${blobs.count} blobs, ` +
      `heap ${Math.round(process.memoryUsage().heapUsed / 2 ** 20)} MiB`,
  );

  const requests = new Map<string, number>();
  let confirmed = 0;
  @Module({
    imports: [
      // The credential guard as the distribution-service has it: its cost is part of what is measured.
      ServiceShellModule.forRoot({
        service: 'bench-root',
        logger: pino({ level: 'silent' }),
        registry: new Registry(),
        readiness: () => [],
        status: () => ({}),
        authenticator: deploymentAuthenticator(BENCH_SECRET),
      }),
    ],
    controllers: [FeedController],
    providers: [
      { provide: FEED_LOG, useValue: log },
      { provide: BLOB_DIRECTORY, useValue: blobs },
      { provide: RELAY_DIRECTORY, useValue: new TopologyRelayDirectory(BENCH_SECRET, () => null) },
      {
        provide: CONFIRMATION_SINK,
        useValue: {
          confirm: async (confirmations: readonly unknown[]) => {
            confirmed += confirmations.length;
          },
        },
      },
    ],
  })
  class BenchRootModule {}
  const app = await NestFactory.create<NestExpressApplication>(BenchRootModule, {
    logger: false,
    bodyParser: false,
  });
  app.useBodyParser('json', { limit: '64mb' });
  app.use((request: { method: string; path: string }, _response: unknown, next: () => void) => {
    const kind = request.path.endsWith('/confirmations')
      ? 'confirm'
      : request.path.startsWith('/feeds/')
        ? 'feed'
        : request.method === 'POST'
          ? 'blobs (batched)'
          : 'blob (one)';
    requests.set(kind, (requests.get(kind) ?? 0) + 1);
    next();
  });
  const rootPort = await freePort();
  await app.listen(rootPort, '127.0.0.1');

  const relayDir = mkdtempSync(join(tmpdir(), 'policygen-bench-relay-'));
  const relayPort = await freePort();
  const started = Date.now();
  const relayMain = resolve(option('relay', join('dist', 'relay', 'main.js')));
  const profile = option('relay-cpu-prof', '');
  const relayLog = option('relay-log', '');
  const relay = spawn(
    process.execPath,
    [...(profile ? ['--cpu-prof', '--cpu-prof-dir', profile] : []), relayMain],
    {
      env: {
        ...process.env,
        POLICYGEN_RELAY_ID: 'root',
        POLICYGEN_PARENT_URL: `http://127.0.0.1:${rootPort}`,
        POLICYGEN_RELAY_TOKEN: issueRelayToken(BENCH_SECRET, 'root'),
        POLICYGEN_DATA_DIR: relayDir,
        HOST: '127.0.0.1',
        PORT: String(relayPort),
        POLICYGEN_POLL_WAIT_MS: '1000',
      },
      stdio: ['ignore', relayLog ? openSync(relayLog, 'w') : 'ignore', 'inherit'],
    },
  );
  let status = { cursor: 0, nodes: 0, blobFetches: 0 };
  let peakRss = 0;
  for (;;) {
    await new Promise((wake) => setTimeout(wake, 250));
    if (relay.exitCode !== null) throw new Error(`the relay exited with ${relay.exitCode}`);
    peakRss = Math.max(peakRss, peakRssMiB(relay.pid ?? 0));
    try {
      status = (await (await fetch(`http://127.0.0.1:${relayPort}/status`)).json()) as typeof status;
    } catch {
      continue;
    }
    process.stdout.write(`\rrelay: ${status.nodes}/${nodes} nodes, ${status.blobFetches} blobs fetched   `);
    if (status.nodes >= nodes && status.cursor >= log.cursor) break;
  }
  const seconds = (Date.now() - started) / 1000;
  process.stdout.write('\n');
  const steady = await steadyLoad(log, blobs, Number(option('steady', '0')), async () => {
    const answer = (await (await fetch(`http://127.0.0.1:${relayPort}/status`)).json()) as typeof status;
    return answer.cursor;
  });
  const metrics = await (await fetch(`http://127.0.0.1:${relayPort}/metrics`)).text();
  const relayCounted = metrics
    .split('\n')
    .filter((line) => line.startsWith('policygen_relay_parent_requests_total'))
    .join('; ');
  relay.kill('SIGTERM');
  await new Promise((done) => relay.once('exit', done));
  await log.close();
  await app.close();
  const total = [...requests.values()].reduce((sum, count) => sum + count, 0);
  const report = {
    nodes,
    seconds,
    nodesPerSecond: Math.round(nodes / seconds),
    ...(steady ? { steady } : {}),
    requests: total,
    requestsByKind: Object.fromEntries(requests),
    relayCounted,
    blobFetches: status.blobFetches,
    confirmedAtRoot: confirmed,
    relayPeakRssMiB: peakRss,
    benchPeakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
    load: readFileSync('/proc/loadavg', 'utf8').trim(),
  };
  console.log(JSON.stringify(report, null, 2));
  if (out) writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  rmSync(relayDir, { recursive: true, force: true });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
