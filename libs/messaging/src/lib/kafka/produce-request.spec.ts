import fc from 'fast-check';
import type { ProduceRequestInput } from './produce-request';
import { encodeProduceRequest, produceEncodings } from './produce-request';

// kafkajs's own produce request (versions 3 to 7), whose body the bundles have ours write
// (tools/build/bundle-cli.mjs), and its 64-bit integers (a producer id comes as one).
const kafkajsProduceRequest = require('kafkajs/src/protocol/requests/produce/v3/request.js') as (
  input: ProduceRequestInput,
) => { encode(): Promise<{ buffer: Buffer }> };
const Long = require('kafkajs/src/utils/long') as { fromNumber(value: number): unknown };

async function kafkajsBody(input: ProduceRequestInput): Promise<Buffer> {
  return (await kafkajsProduceRequest(input).encode()).buffer;
}

const bytes = fc.oneof(
  fc.constant(null),
  fc.constant(undefined),
  fc.string({ unit: 'grapheme', maxLength: 300 }),
  fc.uint8Array({ maxLength: 300 }).map((array) => Buffer.from(array)),
);
const headerValue = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.uint8Array({ maxLength: 40 }).map((array) => Buffer.from(array)),
);
const message = fc.record(
  {
    key: bytes,
    value: bytes,
    // Around the batch's own time (Date.now), before and after it, and far from it.
    timestamp: fc.oneof(
      fc.constant(undefined),
      fc.integer({ min: 1_600_000_000_000, max: 1_800_000_000_000 }),
      fc.integer({ min: 0, max: 2 ** 40 }),
    ),
    headers: fc.dictionary(
      fc.string({ unit: 'grapheme', maxLength: 12 }),
      fc.oneof(headerValue, fc.array(headerValue, { maxLength: 3 })),
      { maxKeys: 3 },
    ),
  },
  { requiredKeys: ['value'] },
);
const input: fc.Arbitrary<ProduceRequestInput> = fc.record(
  {
    transactionalId: fc.oneof(
      fc.constant(null),
      fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }),
    ),
    acks: fc.constantFrom(-1, 0, 1),
    timeout: fc.nat(60_000),
    producerId: fc.oneof(
      fc.integer({ min: -1, max: 2 ** 40 }),
      fc.integer({ min: -1, max: 2 ** 40 }).map((id) => Long.fromNumber(id)),
      // As kafkajs's idempotent producer holds the id the broker gave it: as text.
      fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String),
    ),
    producerEpoch: fc.integer({ min: 0, max: 32_767 }),
    topicData: fc.array(
      fc.record({
        topic: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }),
        partitions: fc.array(
          fc.record(
            {
              partition: fc.nat(64),
              firstSequence: fc.nat(2 ** 31 - 1),
              messages: fc.array(message, { maxLength: 6 }),
            },
            { requiredKeys: ['partition', 'messages'] },
          ),
          { maxLength: 3 },
        ),
      }),
      { maxLength: 3 },
    ),
  },
  { requiredKeys: ['acks', 'timeout', 'topicData'] },
);

describe('encodeProduceRequest', () => {
  afterEach(() => jest.restoreAllMocks());

  it("writes kafkajs's bytes for any topics, partitions, records, headers, timestamps and producer", async () => {
    await fc.assert(
      fc.asyncProperty(
        input,
        fc.integer({ min: 1_600_000_000_000, max: 1_800_000_000_000 }),
        async (given, now) => {
          // The records without a timestamp of their own take the batch's time: the same for both.
          jest.spyOn(Date, 'now').mockReturnValue(now);
          const ours = encodeProduceRequest(given);
          expect(ours).not.toBeNull();
          expect((ours as Buffer).toString('hex')).toBe((await kafkajsBody(given)).toString('hex'));
        },
      ),
      { numRuns: 400 },
    );
  });

  it('writes a batch of latest-bundles records as kafkajs does, its checksum included', async () => {
    jest.spyOn(Date, 'now').mockReturnValue(1_764_000_000_000);
    const value = JSON.stringify({
      files: Array.from({ length: 35 }, (_, i) => ({ path: `f${i}`, sha256: 'ab'.repeat(32) })),
    });
    const given: ProduceRequestInput = {
      acks: -1,
      timeout: 30_000,
      producerId: Long.fromNumber(4_000),
      producerEpoch: 2,
      topicData: [
        {
          topic: 'policygen.node-bundles.latest.v1',
          partitions: [
            {
              partition: 3,
              firstSequence: 17,
              messages: [
                { key: 'node-1', value },
                { key: 'node-2', value: null },
              ],
            },
          ],
        },
      ],
    };
    expect(encodeProduceRequest(given)?.equals(await kafkajsBody(given))).toBe(true);
  });

  it("takes the request as kafkajs's idempotent producer makes it: the broker's producer id as text", async () => {
    jest.spyOn(Date, 'now').mockReturnValue(1_764_000_000_000);
    const given: ProduceRequestInput = {
      acks: -1,
      timeout: 30_000,
      producerId: '1234567',
      producerEpoch: 0,
      topicData: [
        {
          topic: 't',
          partitions: [{ partition: 0, firstSequence: 3, messages: [{ key: 'n', value: 'v' }] }],
        },
      ],
    };
    const ours = encodeProduceRequest(given);
    expect(ours).not.toBeNull();
    expect(ours?.equals(await kafkajsBody(given))).toBe(true);
  });

  it("declines what kafkajs writes otherwise, so that kafkajs's encoder writes it: compression, other values", () => {
    const base = { acks: -1, timeout: 1_000 };
    const batch = (value: unknown, extra: object = {}): ProduceRequestInput => ({
      ...base,
      topicData: [{ topic: 't', partitions: [{ partition: 0, messages: [{ value, ...extra }] }] }],
    });
    expect(encodeProduceRequest({ ...batch('v'), compression: 1 })).toBeNull();
    expect(encodeProduceRequest(batch(42))).toBeNull();
    expect(encodeProduceRequest(batch('v', { timestamp: '1764000000000' }))).toBeNull();
    expect(encodeProduceRequest(batch('v', { headers: { trace: 7 } }))).toBeNull();
    expect(encodeProduceRequest({ ...batch('v'), producerId: '9223372036854775808' })).toBeNull();
    expect(encodeProduceRequest(batch('v'))).not.toBeNull();
  });

  it("is counted by the encoder that wrote each request, as the bundles' kafkajs request calls it", async () => {
    const bundlesRequest = require('./kafkajs-produce-request.cjs') as (input: ProduceRequestInput) => {
      encode(): Promise<unknown>;
    };
    const request = (compression: number): ProduceRequestInput => ({
      acks: -1,
      timeout: 1_000,
      compression,
      topicData: [{ topic: 't', partitions: [{ partition: 0, messages: [{ key: 'k', value: 'v' }] }] }],
    });
    const before = produceEncodings();
    await bundlesRequest(request(0)).encode();
    await bundlesRequest(request(0)).encode();
    // Compressed (gzip): ours declines, kafkajs's encoder writes it.
    await bundlesRequest(request(1)).encode();
    expect(produceEncodings()).toEqual({ ours: before.ours + 2, kafkajs: before.kafkajs + 1 });
  });
});
