const BLOCK = 512;

export interface TarEntry {
  readonly name: string;
  readonly content: Buffer;
}

/**
 * The regular files of a tar stream, as whole buffers. The blob batches are tars of hundreds of
 * small files: a stream object and its events per entry (tar-stream's extract) cost the relay more
 * than the rest of the sync (profiled), while reading headers straight from the chunks is cheap.
 * Reads what tar-stream's pack writes: ustar headers, names with their prefix, octal sizes.
 */
export async function* tarEntries(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<TarEntry> {
  let pending: Buffer = Buffer.alloc(0);
  let ended = false;
  for await (const chunk of chunks) {
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    pending = pending.length === 0 ? bytes : Buffer.concat([pending, bytes]);
    let at = 0;
    while (!ended && pending.length - at >= BLOCK) {
      const header = pending.subarray(at, at + BLOCK);
      if (header.every((byte) => byte === 0)) {
        ended = true;
        break;
      }
      checkHeader(header);
      const size = octal(header, 124, 12);
      const padded = Math.ceil(size / BLOCK) * BLOCK;
      if (pending.length - at < BLOCK + padded) break;
      const type = header[156];
      if (type === 0 || type === 0x30)
        yield { name: nameOf(header), content: pending.subarray(at + BLOCK, at + BLOCK + size) };
      at += BLOCK + padded;
    }
    pending = pending.subarray(at);
  }
  if (!ended) throw new Error('the tar stream ended before its end-of-archive blocks');
}

function nameOf(header: Buffer): string {
  const name = text(header, 0, 100);
  const prefix = header.toString('latin1', 257, 262) === 'ustar' ? text(header, 345, 155) : '';
  return prefix ? `${prefix}/${name}` : name;
}

function text(header: Buffer, offset: number, length: number): string {
  const end = header.indexOf(0, offset);
  return header.toString('utf8', offset, end === -1 || end > offset + length ? offset + length : end);
}

function octal(header: Buffer, offset: number, length: number): number {
  const digits = text(header, offset, length).trim();
  if (!/^[0-7]+$/.test(digits)) throw new Error(`a tar header with the size "${digits}"`);
  return parseInt(digits, 8);
}

/** The header's checksum: the sum of its bytes, the checksum field counted as spaces. */
function checkHeader(header: Buffer): void {
  let sum = 8 * 0x20;
  for (let index = 0; index < BLOCK; index++) if (index < 148 || index >= 156) sum += header[index] ?? 0;
  if (sum !== octal(header, 148, 8)) throw new Error('a tar header with a wrong checksum');
}
