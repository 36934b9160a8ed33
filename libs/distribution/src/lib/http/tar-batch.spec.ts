import { Readable } from 'node:stream';
import fc from 'fast-check';
import { extract } from 'tar-stream';
import { TAR_END, tarHeader, tarPadding } from './tar-batch';

async function entriesOf(
  archive: Buffer,
): Promise<{ name: string; mode: number | undefined; content: Buffer }[]> {
  const reader = extract();
  const entries: { name: string; mode: number | undefined; content: Buffer }[] = [];
  const done = new Promise<void>((resolve, reject) => {
    reader.on('entry', (header, stream, next) => {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: unknown) => chunks.push(chunk as Buffer));
      stream.on('end', () => {
        entries.push({ name: header.name, mode: header.mode, content: Buffer.concat(chunks) });
        next();
      });
    });
    reader.on('finish', resolve);
    reader.on('error', reject);
  });
  Readable.from([archive]).pipe(reader);
  await done;
  return entries;
}

describe('tarHeader (a blob batch written without tar-stream)', () => {
  it('writes archives tar-stream reads back to the same files', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            name: fc.string({
              unit: fc.constantFrom(...'0123456789abcdef-_.'),
              minLength: 1,
              maxLength: 100,
            }),
            content: fc.uint8Array({ maxLength: 1_500 }).map((bytes) => Buffer.from(bytes)),
          }),
          { maxLength: 8 },
        ),
        async (files) => {
          const archive = Buffer.concat([
            ...files.flatMap(({ name, content }) => [
              tarHeader(name, content.length),
              content,
              tarPadding(content.length),
            ]),
            TAR_END,
          ]);
          expect(archive.length % 512).toBe(0);
          expect(await entriesOf(archive)).toEqual(
            files.map(({ name, content }) => ({ name, mode: 0o644, content })),
          );
        },
      ),
      { numRuns: 200 },
    );
  });
});
