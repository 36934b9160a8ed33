import { crc32c } from './crc32c';

/**
 * The body of a Kafka produce request (versions 3 to 7, record batches of magic 2, no
 * compression) written in one pass into one buffer of its exact size, byte for byte what kafkajs
 * writes (`requests/produce/v3/request.js`; a property test holds them equal). kafkajs builds each
 * record in an encoder of its own, then copies it into the batch, the batch into a bigger one, that
 * into the partition's, the topic's and the request's, each grown by doubling with zero-filled
 * allocations: ~25 µs of a 4.5 KB record, the latest-bundles record the distribution-service
 * forwards for every node change, where the bytes themselves take ~2 µs to write.
 *
 * What it does not write as kafkajs does — compression, a timestamp or a value of another type than
 * those below — it declines (`null`), and kafkajs's own encoder writes that request.
 */
export interface ProduceRequestInput {
  readonly transactionalId?: string | null;
  readonly acks: number;
  readonly timeout: number;
  readonly compression?: number;
  readonly producerId?: unknown;
  readonly producerEpoch?: number;
  readonly topicData: readonly ProduceTopicData[];
}

export interface ProduceTopicData {
  readonly topic: string;
  readonly partitions: readonly {
    readonly partition: number;
    readonly firstSequence?: number;
    readonly messages: readonly ProduceMessage[];
  }[];
}

export interface ProduceMessage {
  readonly key?: unknown;
  readonly value?: unknown;
  readonly timestamp?: unknown;
  readonly headers?: unknown;
}

const NO_COMPRESSION = 0;
const MAGIC = 2;
const TRANSACTIONAL = 16;
/** A record's timestamp delta is written as a number below this (a varlong of 8 bytes at most). */
const SAFE_DELTA = 2 ** 51;
const INTEGER_TEXT = /^-?[0-9]{1,19}$/;

type Bytes = Buffer | string | null;

interface PreparedRecord {
  readonly key: Bytes;
  readonly keyLength: number;
  readonly value: Bytes;
  readonly valueLength: number;
  readonly timestampDelta: number;
  readonly headers: readonly { key: string; keyLength: number; value: Bytes; valueLength: number }[];
  /** The record's length prefix: everything after it. */
  readonly bodyLength: number;
}

interface PreparedBatch {
  readonly partition: number;
  readonly firstSequence: number;
  readonly firstTimestamp: bigint;
  readonly maxTimestamp: bigint;
  readonly records: readonly PreparedRecord[];
  /** From the attributes to the last record: what the checksum covers. */
  readonly bodyLength: number;
}

/** Produce requests of this process whose body ours wrote, and those it left to kafkajs's encoder. */
const encodings = { ours: 0, kafkajs: 0 };

/** Counts one produce request, by the encoder that wrote it (the bundles' kafkajs request does). */
export function noteProduceEncoding(encoder: keyof typeof encodings): void {
  encodings[encoder]++;
}

/** How many produce requests of this process each encoder wrote. */
export function produceEncodings(): Readonly<typeof encodings> {
  return { ...encodings };
}

/** The request's body, or null when kafkajs must write it (see above). */
export function encodeProduceRequest(input: ProduceRequestInput): Buffer | null {
  if ((input.compression ?? NO_COMPRESSION) !== NO_COMPRESSION) return null;
  const transactionalId = input.transactionalId ?? null;
  if (transactionalId !== null && typeof transactionalId !== 'string') return null;
  const producerId = input.producerId === undefined ? -1n : int64Of(input.producerId);
  const producerEpoch = input.producerEpoch ?? 0;
  if (producerId === null || !Number.isInteger(producerEpoch)) return null;

  let size = stringLength(transactionalId) + 2 + 4 + 4;
  const topics: { topic: string; batches: PreparedBatch[] }[] = [];
  for (const data of input.topicData) {
    if (typeof data.topic !== 'string') return null;
    const batches: PreparedBatch[] = [];
    size += stringLength(data.topic) + 4;
    for (const partition of data.partitions) {
      const batch = prepareBatch(partition);
      if (batch === null) return null;
      batches.push(batch);
      // partition, batch size, first offset, batch length, leader epoch, magic, CRC
      size += 4 + 4 + 8 + 4 + 4 + 1 + 4 + batch.bodyLength;
    }
    topics.push({ topic: data.topic, batches });
  }

  const buffer = Buffer.allocUnsafe(size);
  let offset = writeString(buffer, 0, transactionalId);
  offset = buffer.writeInt16BE(input.acks, offset);
  offset = buffer.writeInt32BE(input.timeout, offset);
  offset = buffer.writeInt32BE(topics.length, offset);
  const attributes = NO_COMPRESSION | (transactionalId ? TRANSACTIONAL : 0);
  for (const { topic, batches } of topics) {
    offset = writeString(buffer, offset, topic);
    offset = buffer.writeInt32BE(batches.length, offset);
    for (const batch of batches) {
      const batchLength = 4 + 1 + 4 + batch.bodyLength;
      offset = buffer.writeInt32BE(batch.partition, offset);
      offset = buffer.writeInt32BE(8 + 4 + batchLength, offset);
      offset = buffer.writeBigInt64BE(0n, offset);
      offset = buffer.writeInt32BE(batchLength, offset);
      offset = buffer.writeInt32BE(0, offset);
      offset = buffer.writeInt8(MAGIC, offset);
      const crcAt = offset;
      const bodyAt = crcAt + 4;
      offset = buffer.writeInt16BE(attributes, bodyAt);
      offset = buffer.writeInt32BE(batch.records.length - 1, offset);
      offset = buffer.writeBigInt64BE(batch.firstTimestamp, offset);
      offset = buffer.writeBigInt64BE(batch.maxTimestamp, offset);
      offset = buffer.writeBigInt64BE(producerId, offset);
      offset = buffer.writeInt16BE(producerEpoch, offset);
      offset = buffer.writeInt32BE(batch.firstSequence, offset);
      offset = buffer.writeInt32BE(batch.records.length, offset);
      for (let index = 0; index < batch.records.length; index++)
        offset = writeRecord(buffer, offset, batch.records[index] as PreparedRecord, index);
      buffer.writeUInt32BE(crc32c(buffer.subarray(bodyAt, offset)), crcAt);
    }
  }
  if (offset !== size) throw new Error(`produce request written to ${offset} of ${size} bytes`);
  return buffer;
}

function prepareBatch(partition: ProduceTopicData['partitions'][number]): PreparedBatch | null {
  const firstSequence = partition.firstSequence ?? 0;
  if (!Number.isInteger(partition.partition) || !Number.isInteger(firstSequence)) return null;
  const now = Date.now();
  const stamped: number[] = [];
  for (const message of partition.messages) {
    const { timestamp } = message;
    if (timestamp === undefined || timestamp === null) continue;
    if (!Number.isSafeInteger(timestamp)) return null;
    stamped.push(timestamp as number);
  }
  // As kafkajs does: `sort()` without a comparer, which orders numbers as their text.
  const timestamps = stamped.length === 0 ? [now] : stamped.sort();
  const first = timestamps[0] as number;
  const max = timestamps[timestamps.length - 1] as number;
  const records: PreparedRecord[] = [];
  // attributes, last offset delta, first and max timestamps, producer id and epoch, first sequence, record count
  let bodyLength = 2 + 4 + 8 + 8 + 8 + 2 + 4 + 4;
  for (let index = 0; index < partition.messages.length; index++) {
    const record = prepareRecord(partition.messages[index] as ProduceMessage, index, now, first);
    if (record === null) return null;
    records.push(record);
    bodyLength += varIntLength(record.bodyLength) + record.bodyLength;
  }
  return {
    partition: partition.partition,
    firstSequence,
    firstTimestamp: BigInt(first),
    maxTimestamp: BigInt(max),
    records,
    bodyLength,
  };
}

function prepareRecord(
  message: ProduceMessage,
  offsetDelta: number,
  now: number,
  firstTimestamp: number,
): PreparedRecord | null {
  const key = bytesOf(message.key);
  const value = bytesOf(message.value);
  if (key === undefined || value === undefined) return null;
  const timestampDelta = (((message.timestamp as number | undefined) || now) as number) - firstTimestamp;
  if (Math.abs(timestampDelta) >= SAFE_DELTA) return null;
  const headers = headersOf(message.headers);
  if (headers === null) return null;
  const keyLength = lengthOf(key);
  const valueLength = lengthOf(value);
  let bodyLength =
    1 +
    varIntLength(timestampDelta) +
    varIntLength(offsetDelta) +
    bytesFieldLength(keyLength) +
    bytesFieldLength(valueLength) +
    varIntLength(headers.length);
  for (const header of headers)
    bodyLength += bytesFieldLength(header.keyLength) + bytesFieldLength(header.valueLength);
  return { key, keyLength, value, valueLength, timestampDelta, headers, bodyLength };
}

function writeRecord(buffer: Buffer, at: number, record: PreparedRecord, offsetDelta: number): number {
  let offset = writeVarInt(buffer, at, record.bodyLength);
  offset = buffer.writeInt8(0, offset);
  offset = writeVarInt(buffer, offset, record.timestampDelta);
  offset = writeVarInt(buffer, offset, offsetDelta);
  offset = writeBytesField(buffer, offset, record.key, record.keyLength);
  offset = writeBytesField(buffer, offset, record.value, record.valueLength);
  offset = writeVarInt(buffer, offset, record.headers.length);
  for (const header of record.headers) {
    offset = writeBytesField(buffer, offset, header.key, header.keyLength);
    offset = writeBytesField(buffer, offset, header.value, header.valueLength);
  }
  return offset;
}

/** kafkajs's headers as it flattens them (an array value is one header per element), or null. */
function headersOf(headers: unknown): PreparedRecord['headers'] | null {
  if (headers === undefined || headers === null) return [];
  if (typeof headers !== 'object') return null;
  const flat: { key: string; keyLength: number; value: Bytes; valueLength: number }[] = [];
  for (const key of Object.keys(headers)) {
    const given = (headers as Record<string, unknown>)[key];
    for (const one of Array.isArray(given) ? given : [given]) {
      // kafkajs measures a header's value with `Buffer.byteLength`, which takes strings and buffers only.
      if (typeof one !== 'string' && !Buffer.isBuffer(one)) return null;
      flat.push({ key, keyLength: Buffer.byteLength(key), value: one, valueLength: lengthOf(one) });
    }
  }
  return flat;
}

/** A key or value as kafkajs takes it: null, a string or a buffer; undefined for anything else. */
function bytesOf(value: unknown): Bytes | undefined {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string' || Buffer.isBuffer(value)) return value;
  return undefined;
}

function lengthOf(bytes: Bytes): number {
  if (bytes === null) return -1;
  return typeof bytes === 'string' ? Buffer.byteLength(bytes, 'utf8') : bytes.length;
}

/** A 64-bit integer as kafkajs takes one; its idempotent producer holds the broker's producer id as text. */
function int64Of(value: unknown): bigint | null {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? BigInt(value) : null;
  if (typeof value === 'string') {
    if (!INTEGER_TEXT.test(value)) return null;
    const integer = BigInt(value);
    return integer === BigInt.asIntN(64, integer) ? integer : null;
  }
  if (typeof value === 'object' && value !== null && typeof (value as { value?: unknown }).value === 'bigint')
    return BigInt.asIntN(64, (value as { value: bigint }).value);
  return null;
}

function stringLength(text: string | null): number {
  return 2 + (text === null ? 0 : Buffer.byteLength(text, 'utf8'));
}

function writeString(buffer: Buffer, at: number, text: string | null): number {
  if (text === null) return buffer.writeInt16BE(-1, at);
  const length = buffer.write(text, at + 2, 'utf8');
  buffer.writeInt16BE(length, at);
  return at + 2 + length;
}

function bytesFieldLength(length: number): number {
  return length < 0 ? varIntLength(-1) : varIntLength(length) + length;
}

function writeBytesField(buffer: Buffer, at: number, bytes: Bytes, length: number): number {
  if (bytes === null) return writeVarInt(buffer, at, -1);
  const offset = writeVarInt(buffer, at, length);
  if (typeof bytes === 'string') buffer.write(bytes, offset, length, 'utf8');
  else bytes.copy(buffer, offset);
  return offset + length;
}

function zigZag(value: number): number {
  return value >= 0 ? value * 2 : -value * 2 - 1;
}

/** A varint's or varlong's length: the same zigzag encoding, for any safe integer. */
function varIntLength(value: number): number {
  return unsignedVarLength(zigZag(value));
}

function unsignedVarLength(value: number): number {
  let length = 1;
  while (value >= 128) {
    value = Math.floor(value / 128);
    length++;
  }
  return length;
}

/** A varint or varlong (the same zigzag encoding, for any safe integer). */
function writeVarInt(buffer: Buffer, at: number, value: number): number {
  return writeUnsignedVar(buffer, at, zigZag(value));
}

function writeUnsignedVar(buffer: Buffer, at: number, value: number): number {
  let offset = at;
  while (value >= 128) {
    buffer[offset++] = (value % 128) | 128;
    value = Math.floor(value / 128);
  }
  buffer[offset++] = value;
  return offset;
}
