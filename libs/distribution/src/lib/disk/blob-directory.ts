import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const SHA256 = /^[0-9a-f]{64}$/;

/**
 * File contents on disk, addressed by SHA-256: `<dir>/<first two hex>/<sha256>`. A blob is written
 * aside and renamed into place, so a reader sees it whole or not at all, and a crash leaves at
 * most a stray file in `tmp/`.
 */
export class BlobDirectory {
  private readonly known = new Set<string>();

  private constructor(private readonly directory: string) {}

  static async open(directory: string): Promise<BlobDirectory> {
    const blobs = new BlobDirectory(directory);
    await mkdir(directory, { recursive: true });
    await rm(join(directory, 'tmp'), { recursive: true, force: true });
    await mkdir(join(directory, 'tmp'));
    for (const shard of await readdir(directory)) {
      if (!/^[0-9a-f]{2}$/.test(shard)) continue;
      for (const name of await readdir(join(directory, shard))) if (SHA256.test(name)) blobs.known.add(name);
    }
    return blobs;
  }

  get count(): number {
    return this.known.size;
  }

  has(sha256: string): boolean {
    return this.known.has(sha256);
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
    const target = this.path(sha256);
    await mkdir(join(target, '..'), { recursive: true });
    const staging = join(this.directory, 'tmp', `${sha256}.${randomBytes(4).toString('hex')}`);
    await writeFile(staging, content);
    await rename(staging, target);
    this.known.add(sha256);
    return true;
  }

  async read(sha256: string): Promise<Buffer> {
    return readFile(this.path(sha256));
  }
}
