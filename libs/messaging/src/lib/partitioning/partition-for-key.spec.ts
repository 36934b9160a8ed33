import fc from 'fast-check';
import { Partitioners } from 'kafkajs';
import { partitionForKey } from './partition-for-key';

/** The producer's own partitioner is the reference: a member must agree with it on every key. */
function kafkajsPartition(key: string, partitions: number): number {
  const partitioner = Partitioners.DefaultPartitioner();
  const partitionMetadata = Array.from({ length: partitions }, (_, partitionId) => ({
    partitionId,
    leader: 0,
    partitionErrorCode: 0,
    replicas: [0],
    isr: [0],
  }));
  return partitioner({ topic: 't', partitionMetadata, message: { key, value: null } });
}

describe('partitionForKey', () => {
  it("agrees with kafkajs's default partitioner on any key and partition count", () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.integer({ min: 1, max: 64 }), (key, partitions) => {
        expect(partitionForKey(key, partitions)).toBe(kafkajsPartition(key, partitions));
      }),
      { numRuns: 2_000 },
    );
  });

  it('gives the partitions of known Kafka keys', () => {
    // Values of Kafka's Java Utils.murmur2 (its UtilsTest), taken modulo after clearing the sign bit.
    expect(partitionForKey('21', 1 << 30)).toBe((-973932308 & 0x7fffffff) % (1 << 30));
    expect(partitionForKey('foobar', 1 << 30)).toBe((-790332482 & 0x7fffffff) % (1 << 30));
    expect(partitionForKey('a-little-bit-long-string', 1 << 30)).toBe((-985981536 & 0x7fffffff) % (1 << 30));
  });

  it('refuses a partition count that is not a positive integer', () => {
    expect(() => partitionForKey('n1', 0)).toThrow(/positive integer/);
  });
});
