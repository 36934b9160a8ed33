// Writes libs/engine/schemas/fleet.schema.json from the engine's zod schemas, the one source of the
// fleet format: `npm run schemas`. A test fails while the written file differs (fleet-schema.spec.ts).
import { build } from 'esbuild';
import { format, resolveConfig } from 'prettier';
import { writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const result = await build({
  absWorkingDir: root,
  entryPoints: [join(root, 'libs', 'engine', 'src', 'lib', 'model', 'fleet-schema.ts')],
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
  createRequire(join(root, 'package.json')),
);
const file = join(root, 'libs', 'engine', 'schemas', 'fleet.schema.json');
await writeFile(
  file,
  await format(JSON.stringify(module.exports.fleetJsonSchema()), {
    ...(await resolveConfig(file)),
    filepath: file,
  }),
);
process.stdout.write(`wrote ${file}\n`);
