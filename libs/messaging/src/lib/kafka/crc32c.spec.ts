import fc from 'fast-check';
import { crc32c, portableCrc32c } from './crc32c';

// kafkajs's own checksum, which the bundles replace with ours (tools/build/bundle-cli.mjs).
const kafkajsCrc32c = require('kafkajs/src/protocol/recordBatch/crc32C') as (bytes: Buffer) => number;

describe.each([
  ['crc32c (native on this machine)', crc32c],
  ['portableCrc32c', portableCrc32c],
])('%s', (_name, checksum) => {
  it("gives CRC-32C's check values (the digits 1 to 9; RFC 3720, B.4: 32 zero bytes)", () => {
    expect(checksum(Buffer.from('123456789'))).toBe(0xe3069283);
    expect(checksum(new Uint8Array(0))).toBe(0);
    expect(checksum(new Uint8Array(32))).toBe(0x8a9136aa);
  });

  it("equals kafkajs's checksum of any bytes, whatever their length and alignment", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 5_000 }), fc.nat(7), (bytes, offset) => {
        // A view that starts inside a larger buffer, as kafkajs's encoder hands its records over.
        const within = Buffer.concat([Buffer.alloc(offset), Buffer.from(bytes)]).subarray(offset);
        expect(checksum(within)).toBe(kafkajsCrc32c(within));
      }),
      { numRuns: 500 },
    );
  });
});

it('is the native checksum on this machine, whose npm install brings its binary', () => {
  expect(crc32c).not.toBe(portableCrc32c);
});
