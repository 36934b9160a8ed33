import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const SHA256 = /^[0-9a-f]{64}$/;
const SHARDS = Array.from({ length: 256 }, (_, index) => index.toString(16).padStart(2, '0'));
/** Files written at once by `writeMany`: enough to keep the disk busy, few enough for the fd table. */
const WRITE_CONCURRENCY = 32;

export interface Blob {
  readonly sha256: string;
  readonly content: Buffer | string;
}

/**
 * File contents on disk, addressed by SHA-256: `<dir>/<first two hex>/<sha256>`. A blob is written
 * aside and renamed into place, so a reader sees it whole or not at all, and a crash leaves at
 * most a stray file in `tmp/`. The 256 shard directories are made when the directory is opened.
 */
export class BlobDirectory {
  private readonly known = new Set<string>();
  /** Blobs asked for (`has`) since the collector last looked, when one is watching: in use by a writer. */
  private touched: Set<string> | null = null;
  private readonly deleting = new Map<string, Promise<void>>();

  private constructor(private readonly directory: string) {}

  static async open(directory: string): Promise<BlobDirectory> {
    const blobs = new BlobDirectory(directory);
    await mkdir(directory, { recursive: true });
    await rm(join(directory, 'tmp'), { recursive: true, force: true });
    await mkdir(join(directory, 'tmp'));
    await Promise.all(
      SHARDS.map(async (shard) => {
        const path = join(directory, shard);
        await mkdir(path, { recursive: true });
        for (const name of await readdir(path)) if (SHA256.test(name)) blobs.known.add(name);
      }),
    );
    return blobs;
  }

  get count(): number {
    return this.known.size;
  }

  /** Whether a blob is held; a writer that relies on the answer (`true`) keeps it from the collector. */
  has(sha256: string): boolean {
    const held = this.known.has(sha256);
    if (held) this.touched?.add(sha256);
    return held;
  }

  /** The blobs asked for since the last call, which starts the tracking (the collector's). */
  takeTouched(): ReadonlySet<string> {
    const touched = this.touched ?? new Set<string>();
    this.touched = new Set();
    return touched;
  }

  /** Every blob held (a copy: the directory may change while it is walked). */
  digests(): string[] {
    return [...this.known];
  }

  /** Where a blob is, or would be. */
  path(sha256: string): string {
    if (!SHA256.test(sha256)) throw new Error(`not a SHA-256: "${sha256}"`);
    return join(this.directory, sha256.slice(0, 2), sha256);
  }

  /** Stores a content under its digest, which it must have; resolves with whether it was new. */
  async write(sha256: string, content: Buffer | string): Promise<boolean> {
    const actual = createHash('sha256').update(content).digest('hex');
    if (actual !== sha256) throw new Error(`blob ${sha256} has the digest ${actual}: refused`);
    if (this.known.has(sha256)) return false;
    await this.deleting.get(sha256);
    const target = this.path(sha256);
    const staging = join(this.directory, 'tmp', `${sha256}.${randomBytes(4).toString('hex')}`);
    await writeFile(staging, content);
    await rename(staging, target);
    this.known.add(sha256);
    return true;
  }

  /** Stores many blobs, a few files at a time; resolves with how many were new. */
  async writeMany(blobs: Iterable<Blob>): Promise<number> {
    const queue = [...blobs];
    let next = 0;
    let written = 0;
    const worker = async (): Promise<void> => {
      while (next < queue.length) {
        const blob = queue[next++];
        if (blob && (await this.write(blob.sha256, blob.content))) written++;
      }
    };
    await Promise.all(Array.from({ length: Math.min(WRITE_CONCURRENCY, queue.length) }, worker));
    return written;
  }

  async read(sha256: string): Promise<Buffer> {
    return readFile(this.path(sha256));
  }

  /**
   * Removes a blob unless a writer asked for it since the collector last looked (the collector's
   * job: nothing may reference it any more); resolves with whether it was removed.
   */
  async deleteUnlessTouched(sha256: string): Promise<boolean> {
    if (!this.known.has(sha256) || this.touched?.has(sha256)) return false;
    // Forgotten at once: from here a writer sees it missing and writes it again, after the unlink.
    this.known.delete(sha256);
    const removal = unlink(this.path(sha256))
      .catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') throw error;
      })
      .finally(() => this.deleting.delete(sha256));
    this.deleting.set(sha256, removal);
    await removal;
    return true;
  }
}
