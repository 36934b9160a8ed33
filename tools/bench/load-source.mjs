// Loads a TypeScript module of this repository bundled from source by esbuild (no build first):
// its workspace libraries through the tsconfig paths, its packages from node_modules.
import { build } from 'esbuild';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

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

/**
 * A benchmark's command line: its options parsed (exit 2 naming what it does not take, or what
 * `check` refuses), its module loaded from source, `run` given both; the report it returns printed
 * by `format`, written to `--out` when asked, and the exit status `run`'s `ok` says (any error: 1).
 *
 * @template {Record<string, string | string[] | undefined>} Values
 * @param {{
 *   name: string,
 *   entry: string,
 *   options: import('node:util').ParseArgsConfig['options'],
 *   check: (values: Values) => string | undefined,
 *   run: (module: any, values: Values) => Promise<{ report: unknown, text: string, ok: boolean }>,
 * }} tool
 */
export function benchCommand(tool) {
  const fail = (/** @type {unknown} */ error, /** @type {number} */ status, stack = false) => {
    const message =
      error instanceof Error ? (stack ? (error.stack ?? error.message) : error.message) : String(error);
    process.stderr.write(`${tool.name}: ${message}\n`);
    process.exit(status);
  };
  /** @type {Values} */
  let values;
  try {
    values = /** @type {Values} */ (parseArgs({ options: tool.options }).values);
  } catch (error) {
    return fail(error, 2);
  }
  const refused = tool.check(values);
  if (refused) return fail(refused, 2);
  loadSource(tool.entry)
    .then((module) => tool.run(module, values))
    .then(({ report, text, ok }) => {
      process.stdout.write(`${text}\n`);
      const out = values['out'];
      if (typeof out === 'string') writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
      process.exit(ok ? 0 : 1);
    })
    .catch((error) => fail(error, 1, true));
}
