// Loads a TypeScript module of this repository bundled from source by esbuild (no build first):
// its workspace libraries through the tsconfig paths, its packages from node_modules.
import { build } from 'esbuild';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';

/** The repository's root, two levels above the script that runs (tools/bench/…). */
export const ROOT = resolve(dirname(process.argv[1] ?? '.'), '..', '..');

/**
 * @param {string} entry the module's path from the repository's root
 * @returns {Promise<unknown>} its exports
 */
export async function loadSource(entry) {
  const bundled = await build({
    absWorkingDir: ROOT,
    entryPoints: [join(ROOT, entry)],
    tsconfig: join(ROOT, 'tsconfig.base.json'),
    bundle: true,
    packages: 'external',
    platform: 'node',
    format: 'cjs',
    write: false,
    logLevel: 'warning',
  });
  const module = { exports: {} };
  const [output] = bundled.outputFiles;
  if (!output) throw new Error('esbuild gave no output');
  // As Node runs a CommonJS file: its own module, require and where it lies (the test harness asks).
  new Function('module', 'exports', 'require', '__filename', '__dirname', output.text)(
    module,
    module.exports,
    createRequire(join(ROOT, 'package.json')),
    join(ROOT, entry),
    dirname(join(ROOT, entry)),
  );
  return module.exports;
}
