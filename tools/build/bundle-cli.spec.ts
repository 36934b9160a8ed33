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

  it("write kafkajs's produce requests in one pass (ours), its own encoder kept for what ours declines", () => {
    for (const bundle of bundles()) {
      const text = readFileSync(join(root, bundle), 'utf8');
      if (!text.includes(RECORD_BATCH)) continue;
      const ours =
        /var (require_[\w$]+) = __commonJS\(\{\s*"libs\/messaging\/src\/lib\/kafka\/kafkajs-produce-request\.cjs"/.exec(
          text,
        )?.[1];
      expect({ bundle, ours: ours !== undefined }).toEqual({ bundle, ours: true });
      // kafkajs's v4 and v5 requests (v6 and v7 are v5's) are made by ours, not by its v3 module.
      for (const version of ['v4', 'v5']) {
        const at = text.indexOf(`"node_modules/kafkajs/src/protocol/requests/produce/${version}/request.js"`);
        expect({ bundle, version, found: at >= 0 }).toEqual({ bundle, version, found: true });
        expect(text.slice(at, at + 200)).toContain(`requestV3 = ${ours}()`);
      }
    }
  });
});
