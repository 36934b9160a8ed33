/**
 * What tools/build/bundle-cli.mjs puts in the bundles beyond the sources as they are (`npm test`
 * builds them first, through `pretest`).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(__dirname, '..', '..');
const dist = join(root, 'dist');

/** Every bundle the build wrote: each service's `dist/<service>/main.js`, and the CLI. */
function bundles(): string[] {
  if (!existsSync(dist)) throw new Error('dist/ is missing: run `npm run build` first');
  const services = readdirSync(dist)
    .map((entry) => join('dist', entry, 'main.js'))
    .filter((file) => existsSync(join(root, file)));
  return [...services, join('dist', 'cli', 'policygen.js')];
}

const RECORD_BATCH = '// node_modules/kafkajs/src/protocol/recordBatch/v0/index.js';
const KAFKAJS_CHECKSUM = '// node_modules/kafkajs/src/protocol/recordBatch/crc32C/crc32C.js';
const OUR_CHECKSUM = '// libs/messaging/src/lib/kafka/crc32c.ts';

describe('the bundles', () => {
  it("checksum kafkajs's record batches with our CRC-32C, not kafkajs's byte-at-a-time one", () => {
    const withKafka = bundles()
      .map((bundle) => ({ bundle, text: readFileSync(join(root, bundle), 'utf8') }))
      .filter(({ text }) => text.includes(RECORD_BATCH));
    expect(withKafka.map(({ bundle }) => bundle)).toEqual(
      expect.arrayContaining([
        join('dist', 'generator-service', 'main.js'),
        join('dist', 'cli', 'policygen.js'),
      ]),
    );
    const withTheirs = withKafka
      .filter(({ text }) => !text.includes(OUR_CHECKSUM) || text.includes(KAFKAJS_CHECKSUM))
      .map(({ bundle }) => bundle);
    expect(withTheirs).toEqual([]);
  });
});
