/**
 * The partition a keyed message lands in, computed as Kafka's default partitioner does (murmur2 of
 * the key's UTF-8 bytes, sign bit cleared, modulo the partition count; the Java client and kafkajs's
 * DefaultPartitioner agree). Lets a consumer-group member know which keys its partitions carry.
 */
export function partitionForKey(key: string, partitions: number): number {
  if (!Number.isInteger(partitions) || partitions < 1)
    throw new Error(`partitions must be a positive integer, not ${partitions}`);
  return (murmur2(Buffer.from(key, 'utf8')) & 0x7fffffff) % partitions;
}

const SEED = 0x9747b28c;
const M = 0x5bd1e995;
const R = 24;

function murmur2(data: Buffer): number {
  const length = data.length;
  let h = SEED ^ length;
  const whole = length & ~3;
  for (let i = 0; i < whole; i += 4) {
    let k = data.readInt32LE(i);
    k = Math.imul(k, M);
    k ^= k >>> R;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  const tail = length & 3;
  if (tail === 3) h ^= (data[whole + 2] as number) << 16;
  if (tail >= 2) h ^= (data[whole + 1] as number) << 8;
  if (tail >= 1) {
    h ^= data[whole] as number;
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}
