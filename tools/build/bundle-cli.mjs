// Bundles the policygen CLI (apps/cli) and the libraries it uses into one file, dist/cli/policygen.js,
// which apps/cli/bin/policygen.js (`npx policygen`) runs, and the generation pool's worker into
// dist/cli/generation-worker.js, next to it, where the bundled pool looks for it.
// `npm ci` runs it through `prepare`.
// Each file is written aside then renamed, so a concurrent reader never sees half a bundle.
import { build } from 'esbuild';
import { chmod, mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const cli = join(root, 'dist', 'cli', 'policygen.js');
const worker = join(root, 'dist', 'cli', 'generation-worker.js');

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
    }),
    build({
      ...common,
      entryPoints: [join(root, 'libs', 'generation-pool', 'src', 'worker', 'generation-worker.ts')],
      outfile: worker,
    }),
  ]);
  await mkdir(dirname(cli), { recursive: true });
  for (const file of results.flatMap((result) => result.outputFiles)) {
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
