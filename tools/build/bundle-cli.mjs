// Bundles the policygen CLI (apps/cli) and the libraries it uses into one file, dist/cli/policygen.js,
// which apps/cli/bin/policygen.js (`npx policygen`) runs, and the generation pool's worker into
// dist/cli/generation-worker.js, next to it, where the bundled pool looks for it; and each service
// into dist/<service>/main.js; and the dashboard (apps/dashboard, a static single-page app) with
// Vite into dist/dashboard (index.html and assets/), which the services serve.
// `npm ci` runs it through `prepare`.
// Each file is written aside then renamed, so a concurrent reader never sees half a bundle; the
// dashboard's index.html is renamed last, and its assets no index.html names any more are removed.
import { build } from 'esbuild';
import { chmod, mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build as viteBuild } from 'vite';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const cli = join(root, 'dist', 'cli', 'policygen.js');
const worker = join(root, 'dist', 'cli', 'generation-worker.js');
/** The services, each run as its own process (`node dist/<service>/main.js`). */
const services = [
  'config-service',
  'generator-service',
  'distribution-service',
  'relay',
  'dashboard-server',
  'audit-trail',
];

const dashboard = join(root, 'dist', 'dashboard');

/**
 * Native modules: their binary (a .node file in an npm package per platform) cannot go into a
 * bundle, so the bundle requires them from node_modules, as the Docker image ships it.
 */
const NATIVE_MODULES = ['@node-rs/crc32'];

const OPTIONAL_NEST_MODULES = [
  // The clients of @nestjs/microservices's own transports; ours is the messaging port.
  'mqtt',
  'nats',
  'ioredis',
  'amqplib',
  'amqp-connection-manager',
  '@grpc/grpc-js',
  '@grpc/proto-loader',
  '@nestjs/websockets',
  '@nestjs/websockets/socket-module',
  '@fastify/static',
  'class-transformer',
  'class-transformer/storage',
  'class-validator',
  // Swagger UI's files are found relative to this package's own folder, which a bundle does not have.
  'swagger-ui-dist',
  // The database health indicators of @nestjs/terminus, for ORMs we do not use (required lazily).
  '@mikro-orm/core',
  '@nestjs/mongoose',
  '@nestjs/sequelize/*',
  '@nestjs/typeorm/*',
];

/**
 * kafkajs's CRC-32C (every record batch it produces is checksummed) is replaced by ours, native
 * where `@node-rs/crc32` loads and eight bytes a step where it does not
 * (libs/messaging/src/lib/kafka/crc32c.ts: the same checksum, 11× and 3× faster than kafkajs's on a
 * 4.5 KB record). kafkajs requires it as `./crc32C` from its `recordBatch/crc32C/index.js`.
 */
const KAFKAJS_CRC32C = join('kafkajs', 'src', 'protocol', 'recordBatch', 'crc32C');
const fasterKafkaChecksum = {
  name: 'kafkajs-crc32c',
  setup(builder) {
    builder.onResolve({ filter: /^\.\/crc32C$/ }, (args) =>
      args.importer.endsWith(join(KAFKAJS_CRC32C, 'index.js'))
        ? { path: join(root, 'libs', 'messaging', 'src', 'lib', 'kafka', 'kafkajs-crc32c.cjs') }
        : undefined,
    );
  },
};

/**
 * kafkajs's produce request (versions 3 to 7 are made by its `requests/produce/v3/request.js`) is
 * given its body by ours, written in one pass into one buffer of its exact size
 * (libs/messaging/src/lib/kafka/produce-request.ts: the same bytes, ~25 → ~7.5 µs for a 4.5 KB
 * record), and by kafkajs's own encoder for what ours declines (compression). Its v4 and v5 requests
 * (v6 and v7 are v5's) and its version table require it as `../v3/request` and `./v3/request`.
 */
const KAFKAJS_PRODUCE = join('kafkajs', 'src', 'protocol', 'requests', 'produce');
const onePassProduceRequest = {
  name: 'kafkajs-produce-request',
  setup(builder) {
    builder.onResolve({ filter: /^\.\.?\/v3\/request$/ }, (args) =>
      args.importer.includes(KAFKAJS_PRODUCE)
        ? { path: join(root, 'libs', 'messaging', 'src', 'lib', 'kafka', 'kafkajs-produce-request.cjs') }
        : undefined,
    );
  },
};

const common = {
  plugins: [fasterKafkaChecksum, onePassProduceRequest],
  absWorkingDir: root,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  bundle: true,
  tsconfig: join(root, 'tsconfig.base.json'),
  sourcemap: true,
  logLevel: 'warning',
  write: false,
};

/**
 * The dashboard's files, built in memory by Vite with apps/dashboard/vite.config.ts (its outDir
 * names the same dist/dashboard, for a plain `vite build`), index.html last.
 */
async function buildDashboard() {
  const result = await viteBuild({
    configFile: join(root, 'apps', 'dashboard', 'vite.config.ts'),
    // Vite's module runner loads the TypeScript config as the ES module it is, without a warning.
    configLoader: 'runner',
    logLevel: 'warn',
    build: { write: false },
  });
  const index = join(dashboard, 'index.html');
  const files = (Array.isArray(result) ? result : [result])
    .flatMap((output) => output.output)
    .map((item) => ({
      path: join(dashboard, item.fileName),
      contents: item.type === 'chunk' ? item.code : item.source,
    }));
  return [...files.filter((file) => file.path !== index), ...files.filter((file) => file.path === index)];
}

/**
 * Removes the files under dist/dashboard this build did not write (older hashed assets), but not
 * another build's files still being written aside.
 */
async function pruneDashboard(written) {
  const keep = new Set(written);
  for (const entry of await readdir(dashboard, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    if (entry.isFile() && !keep.has(path) && !/\.tmp-\d+$/.test(path)) await rm(path, { force: true });
  }
}

try {
  const [dashboardFiles, ...results] = await Promise.all([
    buildDashboard(),
    build({
      ...common,
      entryPoints: [join(root, 'apps', 'cli', 'src', 'main.ts')],
      outfile: cli,
      banner: { js: '#!/usr/bin/env node' },
      // `policygen start` runs the services in its own process. `bench --pipeline` loads the test
      // harness's providers lazily; testcontainers (a development dependency) stays in node_modules.
      external: [...OPTIONAL_NEST_MODULES, ...NATIVE_MODULES, 'testcontainers', '@testcontainers/*'],
    }),
    build({
      ...common,
      entryPoints: [join(root, 'libs', 'generation-pool', 'src', 'worker', 'generation-worker.ts')],
      outfile: worker,
    }),
    ...services.map((service) =>
      build({
        ...common,
        entryPoints: [join(root, 'apps', service, 'src', 'main.ts')],
        outfile: join(root, 'dist', service, 'main.js'),
        // Optional integrations NestJS requires lazily, Swagger UI (see the list), native modules.
        external: [...OPTIONAL_NEST_MODULES, ...NATIVE_MODULES],
      }),
    ),
  ]);
  for (const file of [...results.flatMap((result) => result.outputFiles), ...dashboardFiles]) {
    await mkdir(dirname(file.path), { recursive: true });
    const staging = `${file.path}.tmp-${process.pid}`;
    await writeFile(staging, file.contents);
    if (file.path === cli) await chmod(staging, 0o755);
    await rename(staging, file.path);
  }
  await pruneDashboard(dashboardFiles.map((file) => file.path));
} catch (error) {
  // esbuild and Vite have printed the errors already.
  process.stderr.write(
    `bundle-cli: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}\n`,
  );
  process.exit(1);
}
