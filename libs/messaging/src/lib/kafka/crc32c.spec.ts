import fc from 'fast-check';
import { crc32c } from './crc32c';

// kafkajs's own checksum, which the bundles replace with ours (tools/build/bundle-cli.mjs).
const kafkajsCrc32c = require('kafkajs/src/protocol/recordBatch/crc32C') as (bytes: Buffer) => number;

describe('crc32c', () => {
  it("gives CRC-32C's check values (the digits 1 to 9; RFC 3720, B.4: 32 zero bytes)", () => {
    expect(crc32c(Buffer.from('123456789'))).toBe(0xe3069283);
    expect(crc32c(new Uint8Array(0))).toBe(0);
    expect(crc32c(new Uint8Array(32))).toBe(0x8a9136aa);
  });

  it("equals kafkajs's checksum of any bytes, whatever their length and alignment", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 5_000 }), fc.nat(7), (bytes, offset) => {
        // A view that starts inside a larger buffer, as kafkajs's encoder hands its records over.
        const within = Buffer.concat([Buffer.alloc(offset), Buffer.from(bytes)]).subarray(offset);
        expect(crc32c(within)).toBe(kafkajsCrc32c(within));
      }),
      { numRuns: 500 },
    );
  });
});
