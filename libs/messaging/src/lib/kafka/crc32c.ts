/**
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of Kafka's record batches.
 * kafkajs computes it a byte a step, with one table; the bundles put this one in its place
 * (tools/build/bundle-cli.mjs), the same function of the bytes (a property test holds both forms
 * equal to kafkajs's own). Every record batch a service produces is checksummed: the generator's
 * node bundles, the distribution-service's latest bundles (~4.5 KB per node change); at 10,000
 * nodes that was 3% of a generator's import and 2–3% of the distribution-service's steady CPU with
 * the portable form below. The native one of `@node-rs/crc32` (its binary comes in an npm package
 * per platform) takes 0.9 µs for 4.5 KB where the portable one takes 3.4 and kafkajs's 10.
 */
const TABLES = buildTables();

function buildTables(): Int32Array[] {
  const tables = Array.from({ length: 8 }, () => new Int32Array(256));
  const [first] = tables as [Int32Array];
  for (let byte = 0; byte < 256; byte++) {
    let crc = byte;
    for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
    first[byte] = crc;
  }
  for (let slice = 1; slice < 8; slice++) {
    const previous = tables[slice - 1] as Int32Array;
    const table = tables[slice] as Int32Array;
    for (let byte = 0; byte < 256; byte++) {
      const crc = previous[byte] as number;
      table[byte] = (crc >>> 8) ^ (first[crc & 0xff] as number);
    }
  }
  return tables;
}

const [T0, T1, T2, T3, T4, T5, T6, T7] = TABLES as [
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
];

/** The CRC-32C of the bytes, unsigned: natively where `@node-rs/crc32` loads, else `portableCrc32c`. */
export const crc32c: (bytes: Uint8Array) => number = nativeCrc32c() ?? portableCrc32c;

function nativeCrc32c(): ((bytes: Uint8Array) => number) | undefined {
  try {
    // Loaded when needed, not imported: a platform without its binary keeps the portable form.
    const native = require('@node-rs/crc32') as { crc32c(input: Uint8Array): number };
    return (bytes) => native.crc32c(bytes);
  } catch {
    return undefined;
  }
}

/** The CRC-32C of the bytes, unsigned, in JavaScript: eight bytes a step ("slicing-by-8"). */
export function portableCrc32c(bytes: Uint8Array): number {
  let crc = -1;
  let index = 0;
  const whole = bytes.length - (bytes.length % 8);
  for (; index < whole; index += 8) {
    crc ^=
      (bytes[index] as number) |
      ((bytes[index + 1] as number) << 8) |
      ((bytes[index + 2] as number) << 16) |
      ((bytes[index + 3] as number) << 24);
    crc =
      (T7[crc & 0xff] as number) ^
      (T6[(crc >>> 8) & 0xff] as number) ^
      (T5[(crc >>> 16) & 0xff] as number) ^
      (T4[crc >>> 24] as number) ^
      (T3[bytes[index + 4] as number] as number) ^
      (T2[bytes[index + 5] as number] as number) ^
      (T1[bytes[index + 6] as number] as number) ^
      (T0[bytes[index + 7] as number] as number);
  }
  for (; index < bytes.length; index++)
    crc = (T0[(crc ^ (bytes[index] as number)) & 0xff] as number) ^ (crc >>> 8);
  return (crc ^ -1) >>> 0;
}
