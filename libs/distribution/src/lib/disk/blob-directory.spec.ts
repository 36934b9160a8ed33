import { createHash } from 'node:crypto';
import {
  appendFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { BlobDirectory } from './blob-directory';

const digestOf = (content: string): string => createHash('sha256').update(content).digest('hex');
const blob = (content: string) => ({ sha256: digestOf(content), content });

describe('BlobDirectory (packs and an index)', () => {
  let directory: string;
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'policygen-packs-'));
  });
  afterEach(() => rmSync(directory, { recursive: true, force: true }));

  it('writes a batch at once, refuses it whole if one blob has another digest, and reads each back', async () => {
    const blobs = await BlobDirectory.open(directory);
    const batch = Array.from({ length: 300 }, (_, index) => blob(`content ${index}\n`.repeat(index + 1)));
    await expect(blobs.writeMany([...batch.slice(0, 2), { ...blob('x'), content: 'y' }])).rejects.toThrow(
      /refused/,
    );
    expect(blobs.count).toBe(0);
    expect(await blobs.writeMany([...batch, batch[0] ?? blob('')])).toBe(300);
    expect(await blobs.writeMany(batch.slice(0, 10))).toBe(0);
    for (const { sha256, content } of batch) {
      expect((await blobs.read(sha256)).toString()).toBe(content);
      expect(blobs.readNow(sha256).toString()).toBe(content);
    }
    await expect(blobs.read(digestOf('absent'))).rejects.toMatchObject({ code: 'ENOENT' });
    blobs.close();
  });

  it('finds every blob again after reopening, and drops a torn last index record', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.string(), { minLength: 1, maxLength: 40 }),
        fc.nat(47),
        async (texts, tear) => {
          const at = mkdtempSync(join(directory, 'case-'));
          const blobs = await BlobDirectory.open(at);
          for (const text of texts) await blobs.write(digestOf(text), text);
          blobs.close();
          if (tear > 0) appendFileSync(join(at, 'index'), Buffer.alloc(tear, 7));
          const reopened = await BlobDirectory.open(at);
          expect(reopened.count).toBe(new Set(texts).size);
          for (const text of texts) expect((await reopened.read(digestOf(text))).toString()).toBe(text);
          expect(statSync(join(at, 'index')).size % 48).toBe(0);
          await reopened.write(digestOf('after'), 'after');
          reopened.close();
          const again = await BlobDirectory.open(at);
          expect((await again.read(digestOf('after'))).toString()).toBe('after');
          again.close();
        },
      ),
      { numRuns: 25 },
    );
  });

  it('forgets a deleted blob for good, unless a writer asked for it since the collector looked', async () => {
    const blobs = await BlobDirectory.open(directory);
    const kept = blob('kept');
    const dropped = blob('dropped');
    const asked = blob('asked for');
    await blobs.writeMany([kept, dropped, asked]);
    blobs.takeTouched();
    expect(blobs.has(asked.sha256)).toBe(true);
    expect(await blobs.deleteUnlessTouched(asked.sha256)).toBe(false);
    expect(await blobs.deleteUnlessTouched(dropped.sha256)).toBe(true);
    expect(blobs.has(dropped.sha256)).toBe(false);
    blobs.close();
    const reopened = await BlobDirectory.open(directory);
    expect(reopened.digests().sort()).toEqual([kept.sha256, asked.sha256].sort());
    expect(await reopened.write(dropped.sha256, dropped.content)).toBe(true);
    expect((await reopened.read(dropped.sha256)).toString()).toBe('dropped');
    reopened.close();
  });

  it('takes the blobs of the former layout (a file each under a shard directory) into its packs', async () => {
    const old = blob('from the file-per-blob days');
    mkdirSync(join(directory, old.sha256.slice(0, 2)));
    writeFileSync(join(directory, old.sha256.slice(0, 2), old.sha256), old.content);
    const blobs = await BlobDirectory.open(directory);
    expect((await blobs.read(old.sha256)).toString()).toBe(old.content);
    expect(readdirSync(directory).sort()).toEqual(['index', 'packs']);
    blobs.close();
  });
});
