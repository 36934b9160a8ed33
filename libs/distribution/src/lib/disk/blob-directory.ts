import { hash } from 'node:crypto';
import {
  closeSync,
  constants,
  existsSync,
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
  fdatasync as fdatasyncCallback,
} from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { DiskHealth } from './disk-health';
import { fsyncDirectory, stagingNameOf, writeFileDurably } from '@policygen/service-kit';

const SHA256 = /^[0-9a-f]{64}$/;
const readAt = promisify(readCallback);
const fdatasyncAsync = promisify(fdatasyncCallback);

/** An index record: digest (32 bytes), pack number (u32), offset (f64), length (u32; all ones: deleted). */
const RECORD = 48;
const DELETED = 0xffffffff;
/** A pack takes new blobs until it is this large. */
const PACK_LIMIT = 256 * 2 ** 20;
/** Bytes written at once: a batch is split so that no single buffer grows without bound. */
const WRITE_CHUNK = 8 * 2 ** 20;
/** Read and write, created when absent, never O_APPEND: every write goes where its index record says. */
const READ_WRITE = constants.O_RDWR | constants.O_CREAT;
/** How often at most `sync` records how far the files are flushed (the `synced` mark). */
const MARK_INTERVAL_MS = 5_000;

export interface BlobDirectoryOptions {
  /** Told of torn writes repaired at opening and of writes that fail (a full disk). */
  readonly health?: DiskHealth;
  /** A pack takes new blobs until it is this large (default 256 MiB). */
  readonly packLimit?: number;
}

/**
 * How far the files were flushed when it was written: the index records before `records`, and
 * each pack's bytes before its size, are on the disk. What lies beyond was never flushed: a power
 * loss may have left it torn, so it is checked at opening; what lies before is trusted.
 */
interface SyncedMark {
  readonly records: number;
  readonly packs: Readonly<Record<string, number>>;
}

export interface Blob {
  readonly sha256: string;
  readonly content: Buffer | string;
}

interface Pack {
  readonly number: number;
  readonly fd: number;
  size: number;
  /** Blobs held in it (counted, not their bytes: an empty blob is held too). */
  live: number;
  /** Written since the last flush. */
  dirty: boolean;
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
 *
 * Crash safety: a batch's bytes are written where its index records say (never appended blindly),
 * and a write that fails (ENOSPC) is cut off again, so neither file keeps a part of it. `sync`
 * flushes both, and now and then records how far (`synced`, replaced durably). Opening checks what
 * lies beyond that mark only (a clean stop leaves nothing; re-hashing 800k blobs at every start
 * would cost seconds): a torn index record, records past their pack's end, bytes at a pack's end
 * no record names, and blobs whose bytes do not match their digest are dropped, reported to the
 * `DiskHealth`, and fetched again by whoever needs them.
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
  private indexDirty = false;
  private markedAt = 0;
  private dropped = false;
  /** The last `flush` under way: a later one resolves only once it has too. */
  private flushing: Promise<void> = Promise.resolve();
  /** Flushes under way: the index is not rewritten under them (its descriptor closes). */
  private flushesUnderWay = 0;
  /** Blobs asked for (`has`) since the collector last looked, when one is watching: in use by a writer. */
  private touched: Set<string> | null = null;

  private constructor(
    private readonly directory: string,
    private readonly options: BlobDirectoryOptions,
  ) {}

  static async open(directory: string, options: BlobDirectoryOptions = {}): Promise<BlobDirectory> {
    const blobs = new BlobDirectory(directory, options);
    await mkdir(join(directory, 'packs'), { recursive: true });
    options.health?.watch('blobs', directory);
    for (const leftover of ['tmp', 'index.compacting', stagingNameOf('synced')])
      blobs.removeLeftover(join(directory, leftover));
    blobs.openPacks();
    blobs.loadIndex();
    await blobs.adoptLooseFiles();
    return blobs;
  }

  private removeLeftover(path: string): void {
    if (this.options.health) this.options.health.removeLeftover('blobs', path);
    else rmSync(path, { recursive: true, force: true });
  }

  private repaired(kind: string, detail: Record<string, unknown>): void {
    this.options.health?.tornWriteRepaired({ store: 'blobs', kind, detail });
  }

  /** Whether opening dropped blobs (torn): the bundles that name them need them fetched again. */
  get droppedAtOpening(): boolean {
    return this.dropped;
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

  /** The length of a blob held here, in bytes; undefined when it is not held. */
  sizeOf(sha256: string): number | undefined {
    const slot = this.slots.get(sha256);
    return slot === undefined ? undefined : (this.lengthOf[slot] ?? 0);
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
      // Encoded once: the digest is checked on the bytes that are written. One call, not a Hash
      // object per blob: most blobs are small, and the object cost as much as the hashing.
      const bytes = typeof content === 'string' ? Buffer.from(content) : content;
      const actual = hash('sha256', bytes, 'hex');
      if (actual !== sha256) throw new Error(`blob ${sha256} has the digest ${actual}: refused`);
      if (!this.slots.has(sha256)) fresh.set(sha256, bytes);
    }
    this.append([...fresh]);
    return fresh.size;
  }

  /**
   * Flushes the blobs written so far to the disk: a durable feed entry written after this names
   * blobs that survive a power loss too (a process crash loses nothing either way).
   */
  sync(): void {
    for (const pack of this.packs.values())
      if (pack.dirty) {
        fdatasyncSync(pack.fd);
        pack.dirty = false;
      }
    if (this.indexFd >= 0 && this.indexDirty) {
      fdatasyncSync(this.indexFd);
      this.indexDirty = false;
    }
    if (Date.now() - this.markedAt >= MARK_INTERVAL_MS) this.markSynced();
  }

  /**
   * `sync` off the event loop: the files' flushes run in the thread pool, at once, while blobs
   * may go on being written (those are flushed by the next call). Resolves once the blobs written
   * before the call are on the disk, by this flush or by one under way.
   */
  async flush(): Promise<void> {
    const packs = [...this.packs.values()].filter((pack) => pack.dirty);
    for (const pack of packs) pack.dirty = false;
    const index = this.indexFd >= 0 && this.indexDirty ? this.indexFd : -1;
    this.indexDirty = false;
    const mark = this.currentMark();
    const earlier = this.flushing;
    this.flushesUnderWay++;
    const own = (async () => {
      try {
        await Promise.all([
          ...packs.map((pack) => fdatasyncAsync(pack.fd)),
          ...(index >= 0 ? [fdatasyncAsync(index)] : []),
        ]);
      } catch (error) {
        for (const pack of packs) pack.dirty = true;
        if (index >= 0) this.indexDirty = true;
        throw error;
      } finally {
        this.flushesUnderWay--;
      }
    })();
    // An earlier flush that failed leaves some of this caller's blobs unflushed too: it fails with it.
    this.flushing = own;
    own.catch(() => undefined);
    await Promise.all([earlier, own]);
    if (Date.now() - this.markedAt >= MARK_INTERVAL_MS) this.markSynced(mark);
  }

  private currentMark(): SyncedMark {
    return {
      records: this.indexRecords,
      packs: Object.fromEntries([...this.packs.values()].map((pack) => [pack.number, pack.size])),
    };
  }

  /** Records how far the files are flushed (they are, by the caller): opening trusts what lies before. */
  private markSynced(mark: SyncedMark = this.currentMark()): void {
    writeFileDurably(join(this.directory, 'synced'), JSON.stringify(mark));
    this.markedAt = Date.now();
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
    try {
      this.writeRecords(deletionRecord(sha256, this.packOf[slot] ?? 0));
    } catch (error) {
      this.options.health?.writeFailed('blobs', error);
      throw error;
    }
    this.options.health?.writeSucceeded('blobs');
    this.forget(sha256, slot);
    if (this.indexRecords > 2 * this.slots.size + 100_000) this.rewriteIndexIfPossible();
    return true;
  }

  /** Flushes and closes the files (the directory is not usable after): a clean stop leaves nothing to check. */
  close(): void {
    try {
      if (this.indexFd >= 0) {
        this.markedAt = 0;
        this.sync();
      }
    } catch (error) {
      this.options.health?.writeFailed('blobs', error);
    }
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
      if (this.current.size >= (this.options.packLimit ?? PACK_LIMIT))
        this.current = this.openPack(this.current.number + 1);
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
      try {
        writeAllAt(pack.fd, contents, pack.size);
        pack.dirty = true;
        this.writeRecords(records.subarray(0, RECORD * (end - start)));
      } catch (error) {
        // Not held: the bytes written of the batch are cut off, so that the next batch goes where they were.
        cutBack(pack.fd, pack.size);
        this.options.health?.writeFailed('blobs', error);
        throw error;
      }
      this.options.health?.writeSucceeded('blobs');
      let offset = pack.size;
      for (let index = start; index < end; index++) {
        const [sha256, content] = blobs[index] as readonly [string, Buffer];
        this.remember(sha256, pack.number, offset, content.length);
        offset += content.length;
      }
      pack.size += bytes;
      pack.live += end - start;
      start = end;
    }
  }

  /**
   * Index records written after the last whole one; a write that fails is cut off again: a part of
   * a record would shift every later one.
   */
  private writeRecords(records: Buffer): void {
    const at = this.indexRecords * RECORD;
    try {
      for (let done = 0; done < records.length;)
        done += writeSync(this.indexFd, records, done, records.length - done, at + done);
    } catch (error) {
      cutBack(this.indexFd, at);
      throw error;
    }
    this.indexRecords += records.length / RECORD;
    this.indexDirty = true;
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
    pack.live--;
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
    const path = this.packPath(number);
    const created = !existsSync(path);
    const fd = openSync(path, READ_WRITE);
    if (created) fsyncDirectory(join(this.directory, 'packs'));
    const pack: Pack = { number, fd, size: fstatSync(fd).size, live: 0, dirty: false };
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
    // The last pack goes on taking blobs (opened once: a second descriptor would never be closed).
    this.current = this.packs.get(numbers[numbers.length - 1] ?? 0) ?? this.openPack(1);
  }

  private loadIndex(): void {
    const file = join(this.directory, 'index');
    const created = !existsSync(file);
    this.indexFd = openSync(file, READ_WRITE);
    if (created) fsyncDirectory(this.directory);
    const mark = this.readMark();
    const size = fstatSync(this.indexFd).size;
    const whole = size - (size % RECORD);
    /** Where each pack's recorded blobs end (deleted ones too): bytes beyond were never indexed. */
    const recordedEnd = new Map<number, number>();
    /** Blobs recorded after the mark: their bytes may not have reached the disk whole. */
    const unverified = new Set<string>();
    let pastEnd = 0;
    let recordNumber = 0;
    const chunk = Buffer.allocUnsafe(RECORD * 65_536);
    for (let position = 0; position < whole;) {
      const bytes = readSync(this.indexFd, chunk, 0, Math.min(chunk.length, whole - position), position);
      for (let at = 0; at + RECORD <= bytes; at += RECORD, recordNumber++) {
        const sha256 = chunk.toString('hex', at, at + 32);
        const number = chunk.readUInt32LE(at + 32);
        const offset = chunk.readDoubleLE(at + 36);
        const length = chunk.readUInt32LE(at + 44);
        const slot = this.slots.get(sha256);
        if (length === DELETED) {
          if (slot !== undefined) this.forgetQuietly(sha256, slot);
          unverified.delete(sha256);
          continue;
        }
        const pack = this.packs.get(number);
        // Its bytes never reached the pack (a crash between the two writes): not held.
        if (!pack || offset + length > pack.size) {
          pastEnd++;
          continue;
        }
        recordedEnd.set(number, Math.max(recordedEnd.get(number) ?? 0, offset + length));
        if (slot !== undefined) this.forgetQuietly(sha256, slot);
        this.remember(sha256, number, offset, length);
        pack.live++;
        if (mark === null || recordNumber >= mark.records) unverified.add(sha256);
        else unverified.delete(sha256);
      }
      position += bytes;
    }
    this.indexRecords = whole / RECORD;
    // A record without its end was being written when the process stopped: it never counted.
    if (whole !== size) {
      ftruncateSync(this.indexFd, whole);
      this.repaired('torn-index-record', { bytes: size - whole });
    }
    if (pastEnd > 0) {
      this.repaired('index-past-pack-end', { records: pastEnd });
      this.dropped = true;
    }
    this.cutUnindexedTails(recordedEnd, mark);
    this.dropMismatched(unverified);
    for (const pack of [...this.packs.values()])
      if (pack.live === 0 && pack !== this.current) {
        this.packs.delete(pack.number);
        closeSync(pack.fd);
        unlinkSync(this.packPath(pack.number));
      }
    if (this.indexRecords > 2 * this.slots.size + 100_000 || pastEnd > 0) this.rewriteIndexIfPossible();
  }

  private readMark(): SyncedMark | null {
    try {
      return JSON.parse(readFileSync(join(this.directory, 'synced'), 'utf8')) as SyncedMark;
    } catch {
      return null;
    }
  }

  /**
   * Bytes at a pack's end that no record names and that were not there at the last flush: a batch
   * whose index records never got written. Cut off, so that the pack ends with its last blob.
   */
  private cutUnindexedTails(recordedEnd: ReadonlyMap<number, number>, mark: SyncedMark | null): void {
    for (const pack of this.packs.values()) {
      const end = Math.max(recordedEnd.get(pack.number) ?? 0, mark?.packs[pack.number] ?? 0);
      if (pack.size <= end) continue;
      ftruncateSync(pack.fd, end);
      this.repaired('unindexed-pack-tail', { pack: pack.number, bytes: pack.size - end });
      pack.size = end;
    }
  }

  /** The blobs recorded after the mark whose bytes do not match their digest: dropped, to be fetched again. */
  private dropMismatched(unverified: ReadonlySet<string>): void {
    const dropped: string[] = [];
    for (const sha256 of unverified) {
      const slot = this.slots.get(sha256);
      if (slot === undefined) continue;
      let content: Buffer | null;
      try {
        content = this.readNow(sha256);
      } catch {
        content = null;
      }
      if (content && hash('sha256', content, 'hex') === sha256) continue;
      this.writeRecords(deletionRecord(sha256, this.packOf[slot] ?? 0));
      this.forgetQuietly(sha256, slot);
      dropped.push(sha256);
    }
    if (dropped.length > 0) {
      this.repaired('digest-mismatch', { blobs: dropped.length, examples: dropped.slice(0, 5) });
      this.dropped = true;
    }
    // What was checked is flushed, then marked: the next opening checks only what comes after.
    for (const pack of this.packs.values()) pack.dirty = true;
    this.indexDirty = true;
    this.markedAt = 0;
    this.sync();
  }

  /** While loading: a later record replaces an earlier one, without removing packs half read. */
  private forgetQuietly(sha256: string, slot: number): void {
    this.slots.delete(sha256);
    this.freeSlots.push(slot);
    const pack = this.packs.get(this.packOf[slot] ?? 0);
    if (pack) pack.live--;
  }

  /**
   * A rewrite that fails (a full disk) leaves the index as it was: tried again at the next deletion,
   * as is one that would close the index under a flush.
   */
  private rewriteIndexIfPossible(): void {
    if (this.flushesUnderWay > 0) return;
    try {
      this.rewriteIndex();
    } catch (error) {
      rmSync(join(this.directory, 'index.compacting'), { force: true });
      this.options.health?.writeFailed('blobs', error);
    }
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
    fsyncDirectory(this.directory);
    closeSync(this.indexFd);
    this.indexFd = openSync(file, READ_WRITE);
    this.indexRecords = this.slots.size;
    this.indexDirty = false;
    this.markSynced();
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

/** The record that deletes a blob. */
function deletionRecord(sha256: string, pack: number): Buffer {
  const record = Buffer.alloc(RECORD);
  record.write(sha256, 0, 'hex');
  record.writeUInt32LE(pack, 32);
  record.writeUInt32LE(DELETED, 44);
  return record;
}

/** Cuts a file back to a length after a failed write; shrinking needs no space, so this rarely fails. */
function cutBack(fd: number, length: number): void {
  try {
    ftruncateSync(fd, length);
  } catch {
    // Left longer: the next write goes at `length` all the same (positional), over the stray bytes.
  }
}
