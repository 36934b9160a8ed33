import { createHash } from 'node:crypto';
import {
  appendFileSync,
  closeSync,
  mkdirSync,
  openSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { BlobDirectory } from './blob-directory';
import { DiskHealth } from './disk-health';

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
    expect(readdirSync(directory).sort()).toEqual(['index', 'packs', 'synced']);
    blobs.close();
  });

  it('keeps an empty blob readable when the other blobs of its pack are deleted', async () => {
    const blobs = await BlobDirectory.open(directory, { packLimit: 64 });
    const empty = blob('');
    const other = blob('x'.repeat(100));
    await blobs.writeMany([empty, other]);
    await blobs.write(digestOf('in the next pack'), 'in the next pack');
    blobs.takeTouched();
    expect(await blobs.deleteUnlessTouched(other.sha256)).toBe(true);
    expect((await blobs.read(empty.sha256)).length).toBe(0);
    blobs.close();
    const reopened = await BlobDirectory.open(directory, { packLimit: 64 });
    expect((await reopened.read(empty.sha256)).length).toBe(0);
    reopened.close();
  });
});

describe('BlobDirectory after a crash mid-write: torn writes found, counted and repaired at opening', () => {
  let directory: string;
  let health: DiskHealth;
  const kinds = (): string[] => health.repaired.map((repair) => repair.kind);
  const packFile = (): string => join(directory, 'packs', '000001.pack');
  const batch = Array.from({ length: 20 }, (_, index) => blob(`blob ${index}\n`.repeat(index + 1)));
  beforeEach(async () => {
    directory = mkdtempSync(join(tmpdir(), 'policygen-torn-packs-'));
    health = new DiskHealth();
    const blobs = await BlobDirectory.open(directory);
    await blobs.writeMany(batch);
    blobs.close();
  });
  afterEach(() => rmSync(directory, { recursive: true, force: true }));

  const expectAllBut = async (blobs: BlobDirectory, lost: readonly string[]): Promise<void> => {
    for (const { sha256, content } of batch)
      if (lost.includes(sha256)) expect(blobs.has(sha256)).toBe(false);
      else expect((await blobs.read(sha256)).toString()).toBe(content);
  };

  it('cuts a half-written pack entry (bytes no record names) off the pack, and writes after it', async () => {
    const size = statSync(packFile()).size;
    appendFileSync(packFile(), 'half of a batch whose records were never written');
    const blobs = await BlobDirectory.open(directory, { health });
    expect(kinds()).toEqual(['unindexed-pack-tail']);
    expect(statSync(packFile()).size).toBe(size);
    await expectAllBut(blobs, []);
    await blobs.write(digestOf('after'), 'after');
    blobs.close();
    const again = await BlobDirectory.open(directory);
    expect((await again.read(digestOf('after'))).toString()).toBe('after');
    again.close();
  });

  it('drops the blobs whose records point past the end of their pack, then rewrites the index without them', async () => {
    const last = batch[batch.length - 1] as { sha256: string; content: string };
    truncateSync(packFile(), statSync(packFile()).size - 3);
    const blobs = await BlobDirectory.open(directory, { health });
    expect(kinds()).toContain('index-past-pack-end');
    expect(blobs.droppedAtOpening).toBe(true);
    await expectAllBut(blobs, [last.sha256]);
    expect(await blobs.write(last.sha256, last.content)).toBe(true);
    blobs.close();
    expect(statSync(join(directory, 'index')).size).toBe(48 * batch.length);
  });

  it('drops a blob written after the last flush whose bytes do not match its digest', async () => {
    // Written after the last flush, and the process killed (not closed): its bytes are checked at opening.
    const crashed = await BlobDirectory.open(directory);
    const late = blob('written, never flushed, then torn by a power loss');
    await crashed.write(late.sha256, late.content);
    const fd = openSync(packFile(), 'r+');
    writeSync(fd, Buffer.from('XX'), 0, 2, statSync(packFile()).size - 2);
    closeSync(fd);
    const blobs = await BlobDirectory.open(directory, { health });
    expect(kinds()).toEqual(['digest-mismatch']);
    expect(health.repaired[0]?.detail).toMatchObject({ blobs: 1, examples: [late.sha256] });
    expect(blobs.has(late.sha256)).toBe(false);
    await expectAllBut(blobs, []);
    blobs.close();
    // The drop is recorded: the next opening finds nothing to repair.
    const quiet = new DiskHealth();
    const again = await BlobDirectory.open(directory, { health: quiet });
    expect(quiet.repaired).toEqual([]);
    expect(again.has(late.sha256)).toBe(false);
    again.close();
  });

  it('removes the staging files a rewrite left behind, and a torn index record', async () => {
    writeFileSync(join(directory, 'index.compacting'), 'half an index');
    mkdirSync(join(directory, 'tmp'));
    appendFileSync(join(directory, 'index'), Buffer.alloc(20, 1));
    const blobs = await BlobDirectory.open(directory, { health });
    expect(kinds().sort()).toEqual(['leftover-staging-file', 'leftover-staging-file', 'torn-index-record']);
    expect(readdirSync(directory).sort()).toEqual(['index', 'packs', 'synced']);
    await expectAllBut(blobs, []);
    blobs.close();
  });

  it('opens a cleanly closed directory without checking or repairing anything', async () => {
    const blobs = await BlobDirectory.open(directory, { health });
    expect(kinds()).toEqual([]);
    expect(blobs.droppedAtOpening).toBe(false);
    blobs.close();
  });
});
