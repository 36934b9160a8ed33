// Writes libs/events/schemas/<topic>.schema.json and the AsyncAPI document libs/events/asyncapi.json
// from the events lib's zod schemas, the one source of the event contract. `npm run schemas`; a test
// fails while a written file differs. (libs/events/schemas/v1-baseline/ is the contract as first
// published: it is never rewritten, a test holds every schema to it.)
import { format, resolveConfig } from 'prettier';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loadTsModule, ROOT as root } from '../build/load-ts-module.mjs';

const { TOPICS, jsonSchemaOf, asyncApiDocument } = await loadTsModule(
  join('libs', 'events', 'src', 'index.ts'),
);
for (const topic of Object.values(TOPICS)) {
  const file = join(root, 'libs', 'events', 'schemas', `${topic}.schema.json`);
  const options = { ...(await resolveConfig(file)), filepath: file };
  await writeFile(file, await format(JSON.stringify(jsonSchemaOf(topic)), options));
  process.stdout.write(`wrote ${file}\n`);
}
const asyncapi = join(root, 'libs', 'events', 'asyncapi.json');
const { version } = JSON.parse(await readFile(join(root, 'package.json'), 'utf8'));
await writeFile(
  asyncapi,
  await format(JSON.stringify(asyncApiDocument(version)), {
    ...(await resolveConfig(asyncapi)),
    filepath: asyncapi,
  }),
);
process.stdout.write(`wrote ${asyncapi}\n`);
