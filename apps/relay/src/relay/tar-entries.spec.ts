import fc from 'fast-check';
import { pack } from 'tar-stream';
import { tarEntries } from './tar-entries';

async function packed(files: readonly { name: string; content: Buffer }[]): Promise<Buffer> {
  const archive = pack();
  for (const file of files) archive.entry({ name: file.name, size: file.content.length }, file.content);
  archive.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of archive) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function* inPieces(buffer: Buffer, cuts: readonly number[]): AsyncGenerator<Uint8Array> {
  let at = 0;
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    const end = Math.min(buffer.length, cut);
    if (end > at) yield buffer.subarray(at, end);
    at = Math.max(at, end);
  }
  if (at < buffer.length) yield buffer.subarray(at);
}

async function read(chunks: AsyncIterable<Uint8Array>) {
  const entries = [];
  for await (const entry of tarEntries(chunks)) entries.push(entry);
  return entries;
}

describe('tarEntries', () => {
  it('reads back what tar-stream packs, however the stream is cut', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            name: fc.oneof(
              fc
                .uint8Array({ minLength: 32, maxLength: 32 })
                .map((bytes) => Buffer.from(bytes).toString('hex')),
              fc.constantFrom('a/b/c.cf', `${'d/'.repeat(60)}e.cf`),
            ),
            content: fc.uint8Array({ maxLength: 3_000 }).map((bytes) => Buffer.from(bytes)),
          }),
          { maxLength: 12 },
        ),
        fc.array(fc.nat(40_000), { maxLength: 20 }),
        async (files, cuts) => {
          const entries = await read(inPieces(await packed(files), cuts));
          expect(entries.map((entry) => [entry.name, entry.content.toString('hex')])).toEqual(
            files.map((file) => [file.name, file.content.toString('hex')]),
          );
        },
      ),
      { numRuns: 60 },
    );
  });

  it('refuses a stream cut short, and a damaged header', async () => {
    const whole = await packed([{ name: 'x', content: Buffer.from('hello') }]);
    await expect(read(inPieces(whole.subarray(0, 1_024), []))).rejects.toThrow(/ended before/);
    const damaged = Buffer.from(whole);
    damaged[0] = 0x79;
    await expect(read(inPieces(damaged, []))).rejects.toThrow(/checksum/);
  });
});
