// Bundles the policygen CLI (apps/cli) and the libraries it uses into one file, dist/cli/policygen.js,
// which apps/cli/bin/policygen.js (`npx policygen`) runs, and the generation pool's worker into
// dist/cli/generation-worker.js, next to it, where the bundled pool looks for it; and each service
// into dist/<service>/main.js.
// `npm ci` runs it through `prepare`.
// Each file is written aside then renamed, so a concurrent reader never sees half a bundle.
import { build } from 'esbuild';
import { chmod, mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const cli = join(root, 'dist', 'cli', 'policygen.js');
const worker = join(root, 'dist', 'cli', 'generation-worker.js');
/** The services, each run as its own process (`node dist/<service>/main.js`). */
const services = ['config-service', 'generator-service', 'distribution-service', 'relay'];

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

const common = {
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

try {
  const results = await Promise.all([
    build({
      ...common,
      entryPoints: [join(root, 'apps', 'cli', 'src', 'main.ts')],
      outfile: cli,
      banner: { js: '#!/usr/bin/env node' },
      // `policygen start` runs the services in its own process. `bench --pipeline` loads the test
      // harness's providers lazily; testcontainers (a development dependency) stays in node_modules.
      external: [...OPTIONAL_NEST_MODULES, 'testcontainers', '@testcontainers/*'],
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
        // Optional integrations NestJS requires lazily, and Swagger UI (see the list).
        external: OPTIONAL_NEST_MODULES,
      }),
    ),
  ]);
  for (const file of results.flatMap((result) => result.outputFiles)) {
    await mkdir(dirname(file.path), { recursive: true });
    const staging = `${file.path}.tmp-${process.pid}`;
    await writeFile(staging, file.contents);
    if (file.path === cli) await chmod(staging, 0o755);
    await rename(staging, file.path);
  }
} catch (error) {
  // esbuild has printed the errors already.
  process.stderr.write(
    `bundle-cli: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}\n`,
  );
  process.exit(1);
}
