// Bundles the policygen CLI (apps/cli) and the libraries it uses into one file, dist/cli/policygen.js,
// which apps/cli/bin/policygen.js (`npx policygen`) runs. `npm ci` runs it through `prepare`.
// The file is written aside then renamed, so a concurrent reader never sees half a bundle.
import { build } from 'esbuild';
import { chmod, mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const outfile = join(root, 'dist', 'cli', 'policygen.js');

try {
  const result = await build({
    absWorkingDir: root,
    entryPoints: [join(root, 'apps', 'cli', 'src', 'main.ts')],
    outfile,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    bundle: true,
    tsconfig: join(root, 'tsconfig.base.json'),
    sourcemap: true,
    banner: { js: '#!/usr/bin/env node' },
    logLevel: 'warning',
    write: false,
  });
  await mkdir(dirname(outfile), { recursive: true });
  for (const file of result.outputFiles) {
    const staging = `${file.path}.tmp-${process.pid}`;
    await writeFile(staging, file.contents);
    if (file.path === outfile) await chmod(staging, 0o755);
    await rename(staging, file.path);
  }
} catch (error) {
  // esbuild has printed the errors already.
  process.stderr.write(
    `bundle-cli: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}\n`,
  );
  process.exit(1);
}
