/**
 * What tools/build/bundle-cli.mjs puts in the bundles beyond the sources as they are (`npm test`
 * builds them first, through `pretest`).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(__dirname, '..', '..');
const BUNDLES = [
  'config-service',
  'generator-service',
  'distribution-service',
  'relay',
  'dashboard-server',
  'audit-trail',
].map((service) => join('dist', service, 'main.js'));

const RECORD_BATCH = '// node_modules/kafkajs/src/protocol/recordBatch/v0/index.js';
const KAFKAJS_CHECKSUM = '// node_modules/kafkajs/src/protocol/recordBatch/crc32C/crc32C.js';
const OUR_CHECKSUM = '// libs/messaging/src/lib/kafka/crc32c.ts';

describe.each([...BUNDLES, join('dist', 'cli', 'policygen.js')])('%s', (bundle) => {
  const text = (): string => {
    const file = join(root, bundle);
    if (!existsSync(file)) throw new Error(`${bundle} is missing: run \`npm run build\` first`);
    return readFileSync(file, 'utf8');
  };

  it("checksums kafkajs's record batches with our CRC-32C, not kafkajs's byte-at-a-time one", () => {
    const source = text();
    expect(source).toContain(RECORD_BATCH);
    expect(source).toContain(OUR_CHECKSUM);
    expect(source).not.toContain(KAFKAJS_CHECKSUM);
  });
});
