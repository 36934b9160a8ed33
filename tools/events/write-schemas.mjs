// Writes libs/events/schemas/<topic>.schema.json from the events lib's zod schemas, the one source
// of the event contract. `npm run schemas`; a test fails while a written file differs.
import { build } from 'esbuild';
import { format, resolveConfig } from 'prettier';
import { writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const result = await build({
  absWorkingDir: root,
  entryPoints: [join(root, 'libs', 'events', 'src', 'index.ts')],
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
const { TOPICS, jsonSchemaOf } = module.exports;
for (const topic of Object.values(TOPICS)) {
  const file = join(root, 'libs', 'events', 'schemas', `${topic}.schema.json`);
  const options = { ...(await resolveConfig(file)), filepath: file };
  await writeFile(file, await format(JSON.stringify(jsonSchemaOf(topic)), options));
  process.stdout.write(`wrote ${file}\n`);
}
