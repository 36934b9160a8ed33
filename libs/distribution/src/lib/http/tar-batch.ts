const BLOCK = 512;

/** The header fields every blob shares (mode 644, owner 0, mtime 0, a regular file, ustar), checksum blank. */
const TEMPLATE = (() => {
  const header = Buffer.alloc(BLOCK);
  header.write('0000644\0', 100, 'latin1');
  header.write('0000000\0', 108, 'latin1');
  header.write('0000000\0', 116, 'latin1');
  header.write('00000000000\0', 136, 'latin1');
  header.write('        ', 148, 'latin1');
  header.write('0', 156, 'latin1');
  header.write('ustar\u000000', 257, 'latin1');
  return header;
})();

/** The template's byte sum: a header's checksum is it plus its name's and size's bytes (zeros in the template). */
const TEMPLATE_SUM = TEMPLATE.reduce((sum, byte) => sum + byte, 0);

/** The two zero blocks that end an archive. */
export const TAR_END = Buffer.alloc(2 * BLOCK);

/**
 * The tar (ustar) header of a regular file: what tar-stream's pack writes for it, made from a
 * template instead. Serving a batch of hundreds of small blobs through tar-stream cost a stream
 * entry, and three socket writes, per blob.
 */
export function tarHeader(name: string, size: number): Buffer {
  if (Buffer.byteLength(name) > 100) throw new Error(`a tar entry name over 100 bytes: ${name}`);
  if (!Number.isSafeInteger(size) || size < 0 || size >= 8 ** 11)
    throw new Error(`a tar entry of ${size} bytes`);
  const header = Buffer.from(TEMPLATE);
  const nameBytes = header.write(name, 0, 'utf8');
  header.write(`${size.toString(8).padStart(11, '0')}\0`, 124, 'latin1');
  let sum = TEMPLATE_SUM;
  for (let index = 0; index < nameBytes; index++) sum += header[index] ?? 0;
  for (let index = 124; index < 136; index++) sum += header[index] ?? 0;
  header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
  return header;
}

/** The zeros that fill a file's content up to a whole block. */
export function tarPadding(size: number): Buffer {
  const rest = size % BLOCK;
  return rest === 0 ? EMPTY : ZEROS.subarray(0, BLOCK - rest);
}

const EMPTY = Buffer.alloc(0);
const ZEROS = Buffer.alloc(BLOCK);
