// Writes libs/engine/schemas/fleet.schema.json from the engine's zod schemas, the one source of the
// fleet format: `npm run schemas`. A test fails while the written file differs (fleet-schema.spec.ts).
import { format, resolveConfig } from 'prettier';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loadTsModule, ROOT as root } from '../build/load-ts-module.mjs';

const { fleetJsonSchema } = await loadTsModule(
  join('libs', 'engine', 'src', 'lib', 'model', 'fleet-schema.ts'),
);
const file = join(root, 'libs', 'engine', 'schemas', 'fleet.schema.json');
await writeFile(
  file,
  await format(JSON.stringify(fleetJsonSchema()), {
    ...(await resolveConfig(file)),
    filepath: file,
  }),
);
process.stdout.write(`wrote ${file}\n`);
