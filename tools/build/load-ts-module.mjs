// Loads a TypeScript module of the workspace in this process, bundled by esbuild: how the schema
// scripts read the zod schemas they write documents from, without a build of the library first.
import { build } from 'esbuild';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The exports of the module at `entry` (a path relative to the repository root). */
export async function loadTsModule(entry) {
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: [join(ROOT, entry)],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    write: false,
    logLevel: 'warning',
  });
  const module = { exports: {} };
  new Function('module', 'exports', 'require', result.outputFiles[0].text)(
    module,
    module.exports,
    createRequire(join(ROOT, 'package.json')),
  );
  return module.exports;
}
