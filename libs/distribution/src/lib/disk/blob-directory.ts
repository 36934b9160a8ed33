import { createHash } from 'node:crypto';
import {
  closeSync,
  fstatSync,
  ftruncateSync,
  openSync,
  read as readCallback,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  unlinkSync,
  writeSync,
  writevSync,
  fsyncSync,
  fdatasyncSync,
} from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const SHA256 = /^[0-9a-f]{64}$/;
const readAt = promisify(readCallback);

/** An index record: digest (32 bytes), pack number (u32), offset (f64), length (u32; all ones: deleted). */
const RECORD = 48;
const DELETED = 0xffffffff;
/** A pack takes new blobs until it is this large. */
const PACK_LIMIT = 256 * 2 ** 20;
/** Bytes written at once: a batch is split so that no single buffer grows without bound. */
const WRITE_CHUNK = 8 * 2 ** 20;

export interface Blob {
  readonly sha256: string;
  readonly content: Buffer | string;
}

interface Pack {
  readonly number: number;
  readonly fd: number;
  size: number;
  /** Bytes of blobs held in it (the rest were deleted, or torn). */
  live: number;
}

/**
 * File contents addressed by SHA-256, kept in a few large append-only pack files
 * (`packs/<n>.pack`) and an append-only index (`index`, fixed-size records: digest, pack, offset,
 * length; a deletion is a record too). One file per blob cost a file creation (and a rename) each,
 * 100–300 µs on this machine's disk: 100k nodes bring ~800k blobs. A batch is one write to the
 * pack, then one to the index: a blob exists once its index record is written, so a crash leaves
 * at most unindexed bytes at a pack's end, and a torn last record, which opening drops. Blobs
 * never change: a reader that found a blob reads it whole. The index is read at opening (48 bytes
 * a blob) and rewritten when it holds more dead records than live ones; a pack whose blobs are
 * all deleted is removed. A directory of the former layout (`<first two hex>/<sha256>` files) is
 * taken into packs when opened.
 */
export class BlobDirectory {
  private readonly slots = new Map<string, number>();
  private packOf = new Uint32Array(1_024);
  private offsetOf = new Float64Array(1_024);
  private lengthOf = new Uint32Array(1_024);
  private readonly freeSlots: number[] = [];
  private readonly packs = new Map<number, Pack>();
  private current!: Pack;
  private indexFd = -1;
  private indexRecords = 0;
  /** Blobs asked for (`has`) since the collector last looked, when one is watching: in use by a writer. */
  private touched: Set<string> | null = null;

  private constructor(private readonly directory: string) {}

  static async open(directory: string): Promise<BlobDirectory> {
    const blobs = new BlobDirectory(directory);
    await mkdir(join(directory, 'packs'), { recursive: true });
    rmSync(join(directory, 'tmp'), { recursive: true, force: true });
    blobs.openPacks();
    blobs.loadIndex();
    await blobs.adoptLooseFiles();
    return blobs;
  }

  get count(): number {
    return this.slots.size;
  }

  /** Whether a blob is held; a writer that relies on the answer (`true`) keeps it from the collector. */
  has(sha256: string): boolean {
    const held = this.slots.has(sha256);
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
    return [...this.slots.keys()];
  }

  /** Stores a content under its digest, which it must have; resolves with whether it was new. */
  async write(sha256: string, content: Buffer | string): Promise<boolean> {
    return (await this.writeMany([{ sha256, content }])) === 1;
  }

  /**
   * Stores many blobs, each checked against its digest (a wrong one refuses the whole batch);
   * resolves with how many were new. They are appended to the pack in a few large writes.
   */
  async writeMany(blobs: Iterable<Blob>): Promise<number> {
    const fresh = new Map<string, Buffer>();
    for (const { sha256, content } of blobs) {
      const actual = createHash('sha256').update(content).digest('hex');
      if (actual !== sha256) throw new Error(`blob ${sha256} has the digest ${actual}: refused`);
      if (!this.slots.has(sha256))
        fresh.set(sha256, typeof content === 'string' ? Buffer.from(content) : content);
    }
    this.append([...fresh]);
    return fresh.size;
  }

  /**
   * Flushes the blobs written so far to the disk: a durable feed entry written after this names
   * blobs that survive a power loss too (a process crash loses nothing either way).
   */
  sync(): void {
    for (const pack of this.packs.values()) fdatasyncSync(pack.fd);
    if (this.indexFd >= 0) fdatasyncSync(this.indexFd);
  }

  async read(sha256: string): Promise<Buffer> {
    const { fd, offset, length } = this.locate(sha256);
    const buffer = Buffer.allocUnsafe(length);
    const { bytesRead } = await readAt(fd, buffer, 0, length, offset);
    if (bytesRead !== length) throw new Error(`blob ${sha256}: ${bytesRead} of ${length} bytes read`);
    return buffer;
  }

  /** A blob's content, read at once (the batched reader's: a promise per small read costs more than the read). */
  readNow(sha256: string): Buffer {
    const { fd, offset, length } = this.locate(sha256);
    const buffer = Buffer.allocUnsafe(length);
    const bytesRead = readSync(fd, buffer, 0, length, offset);
    if (bytesRead !== length) throw new Error(`blob ${sha256}: ${bytesRead} of ${length} bytes read`);
    return buffer;
  }

  /**
   * Removes a blob unless a writer asked for it since the collector last looked (the collector's
   * job: nothing may reference it any more); resolves with whether it was removed.
   */
  async deleteUnlessTouched(sha256: string): Promise<boolean> {
    const slot = this.slots.get(sha256);
    if (slot === undefined || this.touched?.has(sha256)) return false;
    const record = Buffer.alloc(RECORD);
    record.write(sha256, 0, 'hex');
    record.writeUInt32LE(this.packOf[slot] ?? 0, 32);
    record.writeUInt32LE(DELETED, 44);
    writeSync(this.indexFd, record);
    this.indexRecords++;
    this.forget(sha256, slot);
    if (this.indexRecords > 2 * this.slots.size + 100_000) this.rewriteIndex();
    return true;
  }

  /** Closes the files (the directory is not usable after). */
  close(): void {
    for (const pack of this.packs.values()) closeSync(pack.fd);
    this.packs.clear();
    if (this.indexFd >= 0) closeSync(this.indexFd);
    this.indexFd = -1;
  }

  private locate(sha256: string): { fd: number; offset: number; length: number } {
    const slot = this.slots.get(sha256);
    const pack = slot === undefined ? undefined : this.packs.get(this.packOf[slot] ?? 0);
    if (slot === undefined || !pack) {
      const error = new Error(`no blob ${sha256}`) as NodeJS.ErrnoException;
      error.code = 'ENOENT';
      throw error;
    }
    return { fd: pack.fd, offset: this.offsetOf[slot] ?? 0, length: this.lengthOf[slot] ?? 0 };
  }

  /** Appends contents to the current pack, then their index records; only then are they held. */
  private append(blobs: readonly (readonly [string, Buffer])[]): void {
    let start = 0;
    while (start < blobs.length) {
      if (this.current.size >= PACK_LIMIT) this.current = this.openPack(this.current.number + 1);
      const pack = this.current;
      const contents: Buffer[] = [];
      const records = Buffer.alloc(RECORD * Math.min(blobs.length - start, 65_536));
      let bytes = 0;
      let end = start;
      while (end < blobs.length && end - start < 65_536 && (bytes < WRITE_CHUNK || end === start)) {
        const [sha256, content] = blobs[end] as readonly [string, Buffer];
        const at = RECORD * (end - start);
        records.write(sha256, at, 'hex');
        records.writeUInt32LE(pack.number, at + 32);
        records.writeDoubleLE(pack.size + bytes, at + 36);
        records.writeUInt32LE(content.length, at + 44);
        contents.push(content);
        bytes += content.length;
        end++;
      }
      writeAllAt(pack.fd, contents, pack.size);
      writeSync(this.indexFd, records, 0, RECORD * (end - start));
      this.indexRecords += end - start;
      let offset = pack.size;
      for (let index = start; index < end; index++) {
        const [sha256, content] = blobs[index] as readonly [string, Buffer];
        this.remember(sha256, pack.number, offset, content.length);
        offset += content.length;
      }
      pack.size += bytes;
      pack.live += bytes;
      start = end;
    }
  }

  private remember(sha256: string, pack: number, offset: number, length: number): void {
    const known = this.slots.get(sha256);
    if (known !== undefined) this.forget(sha256, known);
    let slot = this.freeSlots.pop();
    if (slot === undefined) {
      slot = this.slots.size;
      if (slot >= this.packOf.length) this.grow();
    }
    this.slots.set(sha256, slot);
    this.packOf[slot] = pack;
    this.offsetOf[slot] = offset;
    this.lengthOf[slot] = length;
  }

  private forget(sha256: string, slot: number): void {
    this.slots.delete(sha256);
    this.freeSlots.push(slot);
    const pack = this.packs.get(this.packOf[slot] ?? 0);
    if (!pack) return;
    pack.live -= this.lengthOf[slot] ?? 0;
    if (pack.live <= 0 && pack !== this.current) {
      // Nothing of it is held any more: readers that located a blob in it have read it (synchronously) or hold the fd.
      this.packs.delete(pack.number);
      unlinkSync(this.packPath(pack.number));
      setTimeout(() => closeSync(pack.fd), 60_000).unref();
    }
  }

  private grow(): void {
    const size = this.packOf.length * 2;
    const packOf = new Uint32Array(size);
    packOf.set(this.packOf);
    const offsetOf = new Float64Array(size);
    offsetOf.set(this.offsetOf);
    const lengthOf = new Uint32Array(size);
    lengthOf.set(this.lengthOf);
    this.packOf = packOf;
    this.offsetOf = offsetOf;
    this.lengthOf = lengthOf;
  }

  private packPath(number: number): string {
    return join(this.directory, 'packs', `${String(number).padStart(6, '0')}.pack`);
  }

  private openPack(number: number): Pack {
    const fd = openSync(this.packPath(number), 'a+');
    const pack: Pack = { number, fd, size: fstatSync(fd).size, live: 0 };
    this.packs.set(number, pack);
    return pack;
  }

  private openPacks(): void {
    const numbers = readdirSync(join(this.directory, 'packs'))
      .map((name) => /^(\d+)\.pack$/.exec(name)?.[1])
      .filter((number): number is string => number !== undefined)
      .map(Number)
      .sort((a, b) => a - b);
    for (const number of numbers) this.openPack(number);
    this.current = this.openPack((numbers[numbers.length - 1] ?? 0) + (numbers.length === 0 ? 1 : 0));
  }

  private loadIndex(): void {
    const file = join(this.directory, 'index');
    this.indexFd = openSync(file, 'a+');
    const size = fstatSync(this.indexFd).size;
    const whole = size - (size % RECORD);
    const chunk = Buffer.allocUnsafe(RECORD * 65_536);
    for (let position = 0; position < whole;) {
      const bytes = readSync(this.indexFd, chunk, 0, Math.min(chunk.length, whole - position), position);
      for (let at = 0; at + RECORD <= bytes; at += RECORD) {
        const sha256 = chunk.toString('hex', at, at + 32);
        const number = chunk.readUInt32LE(at + 32);
        const offset = chunk.readDoubleLE(at + 36);
        const length = chunk.readUInt32LE(at + 44);
        const slot = this.slots.get(sha256);
        if (length === DELETED) {
          if (slot !== undefined) this.forgetQuietly(sha256, slot);
          continue;
        }
        const pack = this.packs.get(number);
        // Its bytes never reached the pack (a crash between the two writes): not held.
        if (!pack || offset + length > pack.size) continue;
        if (slot !== undefined) this.forgetQuietly(sha256, slot);
        this.remember(sha256, number, offset, length);
        pack.live += length;
      }
      position += bytes;
    }
    this.indexRecords = whole / RECORD;
    // A record without its end was being written when the process stopped: it never counted.
    if (whole !== size) ftruncateSync(this.indexFd, whole);
    for (const pack of [...this.packs.values()])
      if (pack.live === 0 && pack !== this.current) {
        this.packs.delete(pack.number);
        closeSync(pack.fd);
        unlinkSync(this.packPath(pack.number));
      }
    if (this.indexRecords > 2 * this.slots.size + 100_000) this.rewriteIndex();
  }

  /** While loading: a later record replaces an earlier one, without removing packs half read. */
  private forgetQuietly(sha256: string, slot: number): void {
    this.slots.delete(sha256);
    this.freeSlots.push(slot);
    const pack = this.packs.get(this.packOf[slot] ?? 0);
    if (pack) pack.live -= this.lengthOf[slot] ?? 0;
  }

  /** The index with live records only, written aside and renamed over the old one. */
  private rewriteIndex(): void {
    const file = join(this.directory, 'index');
    const staging = `${file}.compacting`;
    const fd = openSync(staging, 'w');
    try {
      const entries = [...this.slots];
      for (let start = 0; start < entries.length; start += 65_536) {
        const slice = entries.slice(start, start + 65_536);
        const records = Buffer.alloc(RECORD * slice.length);
        slice.forEach(([sha256, slot], index) => {
          const at = RECORD * index;
          records.write(sha256, at, 'hex');
          records.writeUInt32LE(this.packOf[slot] ?? 0, at + 32);
          records.writeDoubleLE(this.offsetOf[slot] ?? 0, at + 36);
          records.writeUInt32LE(this.lengthOf[slot] ?? 0, at + 44);
        });
        writeSync(fd, records);
      }
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    for (const pack of this.packs.values()) fsyncSync(pack.fd);
    renameSync(staging, file);
    closeSync(this.indexFd);
    this.indexFd = openSync(file, 'a+');
    this.indexRecords = this.slots.size;
  }

  /** Blobs of the former layout, one file each under `<first two hex>/`: taken into the packs, then removed. */
  private async adoptLooseFiles(): Promise<void> {
    for (const shard of readdirSync(this.directory)) {
      if (!/^[0-9a-f]{2}$/.test(shard)) continue;
      const path = join(this.directory, shard);
      const names = readdirSync(path).filter((name) => SHA256.test(name));
      for (let start = 0; start < names.length; start += 1_000)
        await this.writeMany(
          names
            .slice(start, start + 1_000)
            .map((sha256) => ({ sha256, content: readFileSync(join(path, sha256)) })),
        );
      rmSync(path, { recursive: true, force: true });
    }
  }
}

/** Writes buffers one after the other from a position, a few hundred per system call. */
function writeAllAt(fd: number, buffers: readonly Buffer[], position: number): void {
  let at = position;
  for (let start = 0; start < buffers.length; start += 512) {
    const slice = buffers.slice(start, start + 512);
    const bytes = slice.reduce((sum, buffer) => sum + buffer.length, 0);
    const written = writevSync(fd, slice, at);
    // A short write (rare, for files): the rest goes in one piece.
    if (written < bytes) {
      const rest = Buffer.concat(slice).subarray(written);
      for (let done = 0; done < rest.length;)
        done += writeSync(fd, rest, done, rest.length - done, at + written + done);
    }
    at += bytes;
  }
}
