import type { FileHandle } from 'node:fs/promises';
import { closeSync, createReadStream, existsSync, openSync, readSync, writeSync } from 'node:fs';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { FeedEntry, FeedFile } from '../feed';
import { feedEntrySchema } from '../feed';
import { BlobReferences } from './blob-references';
import type { DiskHealth } from './disk-health';
import { fsyncDirectory } from '@policygen/service-kit';

/** Bytes of old lines copied at once by a rewrite. */
const COPY_CHUNK = 4 * 2 ** 20;

export interface FeedLogOptions {
  /** Flush each append to the disk before it resolves (the root's log: its source commits after). */
  readonly durable?: boolean;
  /**
   * Rewrite the file once it holds this many superseded lines (default: as many as it has nodes,
   * at least 10,000, so that the file stays under twice its live size at a bounded rewriting cost).
   */
  readonly compactAfter?: number;
  /** Told of torn writes repaired at opening and of writes that fail (a full disk). */
  readonly health?: DiskHealth;
}

/** A latest entry and where its line lies in the file (`at` -1: the entry is not its line as written). */
const NO_DIGESTS: readonly string[] = [];

interface Held {
  readonly entry: FeedEntry;
  at: number;
  length: number;
  /** The digests no served bundle named before this entry (new with it, most likely its own). */
  readonly fresh: readonly string[];
}

/** The entries of a slice as the bytes of a JSON array's elements, comma separated. */
export interface FeedSliceText {
  readonly json: Buffer;
  readonly count: number;
  readonly next: number;
  /** The entries `json` holds, in its order. */
  readonly entries: readonly FeedEntry[];
}

export interface FeedSlice {
  readonly entries: readonly FeedEntry[];
  readonly next: number;
}

/**
 * An ordered feed of node entries, kept as an append-only JSON-lines file and indexed in memory by
 * node and by relay. Only each node's latest entry is served: the relays of the entries it
 * supersedes are folded into its `previousPath`, so that a relay whose cursor is older than a
 * superseded entry still learns that the node left it. Older lines are dropped when the file is
 * rewritten.
 *
 * Crash safety: a line is a record, complete once its newline is written. An append that fails
 * (ENOSPC) is cut off again, so the file never keeps a part of one; a durable log flushes each
 * append before it resolves. Opening keeps the lines up to the first that is torn (no newline,
 * not JSON, not an entry: a crash or power loss mid-append) and cuts the file there: what followed
 * was never acknowledged, and is given again (the bus redelivers it, the parent's feed has it).
 * A rewrite goes aside, is flushed, renamed over the file, and the directory flushed.
 *
 * The rewrite runs beside the appends, not in their way: it copies the live lines' bytes as of a
 * moment (each entry knows where its line is) into the file aside, then, between two appends,
 * copies the lines appended meanwhile after them, flushes, and renames. Until the rename the file
 * is the old one, whole; after it, the new one, whole and flushed.
 */
export class FeedLog {
  private readonly latestByNode = new Map<string, FeedEntry>();
  private readonly entriesBySeq = new Map<number, Held>();
  private readonly seqsByRelay = new Map<string, number[]>();
  private readonly references = new BlobReferences();
  /**
   * One copy of each file reference, relay path and string held: 100k nodes of ~34 files would
   * otherwise keep millions of equal path and digest strings (parsed lines share nothing).
   */
  private interned = new Interner();
  private position = 0;
  /** Bytes of whole lines in the file: where the next append goes, and where a failed one is cut back to. */
  private size = 0;
  private newestRevision = 0;
  private superseded = 0;
  private waiters: (() => void)[] = [];
  private handle: FileHandle | null = null;
  /** The file read synchronously (a page's lines): the same file as `handle`, swapped with it. */
  private readFd = -1;
  private writing: Promise<void> = Promise.resolve();
  private compacting: Promise<void> | null = null;
  private closing = false;

  private constructor(
    private readonly file: string,
    private readonly options: FeedLogOptions,
  ) {}

  static async open(file: string, options: FeedLogOptions = {}): Promise<FeedLog> {
    const log = new FeedLog(file, options);
    await mkdir(dirname(file), { recursive: true });
    options.health?.watch('feed', dirname(file));
    if (options.health) options.health.removeLeftover('feed', `${file}.compacting`);
    else await rm(`${file}.compacting`, { force: true });
    const created = !existsSync(file);
    const torn = await log.load();
    log.handle = await open(file, 'a');
    log.readFd = openSync(file, 'r');
    if (created) fsyncDirectory(dirname(file));
    if (torn) {
      const { size } = await log.handle.stat();
      await log.handle.truncate(log.size);
      await log.handle.datasync();
      options.health?.tornWriteRepaired({
        store: 'feed',
        kind: 'torn-line',
        detail: { file, line: torn.line, reason: torn.reason, bytesCut: size - log.size },
      });
    }
    return log;
  }

  /**
   * Reads the file line by line (it may be larger than a string can be); indexes what it holds up
   * to the first torn line, which it names (with the whole lines' size in `size`).
   */
  private async load(): Promise<{ line: number; reason: string } | null> {
    let lineNumber = 0;
    let carry: Buffer = Buffer.alloc(0);
    const stream = createReadStream(this.file, { highWaterMark: 4 * 2 ** 20 });
    try {
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        const data = carry.length > 0 ? Buffer.concat([carry, chunk]) : chunk;
        let start = 0;
        for (let newline = data.indexOf(10, start); newline !== -1; newline = data.indexOf(10, start)) {
          const problem = this.load1(data.toString('utf8', start, newline), this.size, newline + 1 - start);
          if (problem !== null) {
            stream.destroy();
            return { line: lineNumber + 1, reason: problem };
          }
          lineNumber++;
          this.size += newline + 1 - start;
          start = newline + 1;
        }
        carry = data.subarray(start);
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    return carry.length > 0
      ? { line: lineNumber + 1, reason: 'no newline: the last line was cut short' }
      : null;
  }

  /** Indexes a line; what is wrong with it when it is no record. */
  private load1(line: string, at: number, length: number): string | null {
    let record: { readonly next?: number };
    try {
      record = JSON.parse(line) as { readonly next?: number };
    } catch (error) {
      return `not JSON: ${(error as Error).message}`;
    }
    if (typeof record?.next === 'number') {
      this.position = Math.max(this.position, record.next);
      return null;
    }
    const parsed = feedEntrySchema.safeParse(record);
    if (!parsed.success) return `not a feed entry: ${parsed.error.message}`;
    this.index(parsed.data, at, length);
    return null;
  }

  /** The position up to which the feed is known: the last entry's seq, or further (`advance`). */
  get cursor(): number {
    return this.position;
  }

  /** The newest revision of any entry held. */
  get latestRevision(): number {
    return this.newestRevision;
  }

  get nodeCount(): number {
    return this.latestByNode.size;
  }

  latest(nodeId: string): FeedEntry | undefined {
    return this.latestByNode.get(nodeId);
  }

  latestEntries(): IterableIterator<FeedEntry> {
    return this.latestByNode.values();
  }

  /**
   * Whether a node's latest bundle served through `relayId` names the blob (through any relay when
   * null): what a relay may read of its parent's blobs.
   */
  referencedBelow(digest: string, relayId: string | null): boolean {
    return this.references.referencedBelow(digest, relayId);
  }

  /** The digests first named by the entry at `seq` (no served bundle named them before it); none when superseded. */
  freshDigests(seq: number): readonly string[] {
    return this.entriesBySeq.get(seq)?.fresh ?? [];
  }

  /** Whether a node's latest bundle names the blob, whether it is served anywhere or not. */
  referencedAnywhere(digest: string): boolean {
    return this.references.referencedAnywhere(digest);
  }

  /** Appends entries in seq order (each after the cursor). */
  async append(entries: readonly FeedEntry[], next?: number): Promise<void> {
    if (entries.length === 0 && (next === undefined || next <= this.position)) return;
    let last = this.position;
    for (const entry of entries) {
      if (entry.seq <= last) throw new Error(`feed entry ${entry.seq} is not after ${last}`);
      last = entry.seq;
    }
    const mark = next !== undefined && next > last ? next : undefined;
    const lines = entries.map((entry) => Buffer.from(`${JSON.stringify(entry)}\n`));
    if (mark !== undefined) lines.push(Buffer.from(`${JSON.stringify({ next: mark })}\n`));
    // Indexed in the same turn as the write ends: a rewrite never sees lines written but not indexed.
    await this.serially(async () => {
      let at = this.size;
      await this.write(lines.length === 1 ? (lines[0] as Buffer) : Buffer.concat(lines));
      for (const [index, entry] of entries.entries()) {
        const length = lines[index]?.length ?? 0;
        this.index(entry, at, length);
        at += length;
      }
      if (mark !== undefined) this.position = mark;
    });
    this.compactWhenDue();
    const waiting = this.waiters;
    this.waiters = [];
    for (const wake of waiting) wake();
  }

  /** Resolves once no rewrite is under way (one due is started by an append, and runs beside the next). */
  async settled(): Promise<void> {
    while (this.compacting) await this.compacting;
  }

  /** Moves the cursor without entries: nothing up to `next` concerns this log. */
  async advance(next: number): Promise<void> {
    await this.append([], next);
  }

  /** The entries after a cursor that concern a relay (keep or drop a node), in order. */
  after(cursor: number, relayId: string, limit: number): FeedSlice {
    const { held, next } = this.heldAfter(cursor, relayId, limit);
    return { entries: held.map(({ entry }) => entry), next };
  }

  private heldAfter(cursor: number, relayId: string, limit: number): { held: Held[]; next: number } {
    const seqs = this.seqsByRelay.get(relayId) ?? [];
    let low = 0;
    let high = seqs.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if ((seqs[middle] ?? 0) <= cursor) low = middle + 1;
      else high = middle;
    }
    const held: Held[] = [];
    let index = low;
    for (; index < seqs.length && held.length < limit; index++) {
      const found = this.entriesBySeq.get(seqs[index] ?? 0);
      if (found) held.push(found);
    }
    // Superseded seqs left at the end of the relay's list say nothing: the page is complete.
    while (index < seqs.length && !this.entriesBySeq.has(seqs[index] ?? 0)) index++;
    const complete = index >= seqs.length;
    const next = complete ? Math.max(cursor, this.position) : (held[held.length - 1]?.entry.seq ?? cursor);
    return { held, next };
  }

  /**
   * `after`, as the bytes of the entries' JSON: their lines as the file holds them, read in runs of
   * adjacent lines, not each entry written again (a page of 5,000 entries is ~25 MB of JSON).
   */
  afterAsJson(cursor: number, relayId: string, limit: number): FeedSliceText {
    const { held, next } = this.heldAfter(cursor, relayId, limit);
    const parts: Buffer[] = [];
    for (let index = 0; index < held.length;) {
      const first = held[index] as Held;
      if (first.at < 0) {
        parts.push(Buffer.from(`${JSON.stringify(first.entry)}\n`));
        index++;
        continue;
      }
      let end = first.at + first.length;
      let last = index + 1;
      for (; last < held.length; last++) {
        const following = held[last] as Held;
        if (following.at !== end) break;
        end += following.length;
      }
      const run = Buffer.allocUnsafe(end - first.at);
      for (let done = 0; done < run.length;) {
        const read = readSync(this.readFd, run, done, run.length - done, first.at + done);
        if (read === 0) throw new Error(`${this.file}: a line ends before its recorded length`);
        done += read;
      }
      parts.push(run);
      index = last;
    }
    const json = parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
    // Every line ends with its newline: those become the commas between the elements, the last dropped.
    for (let at = json.indexOf(10); at !== -1; at = json.indexOf(10, at + 1)) json[at] = 0x2c;
    return {
      json: json.subarray(0, Math.max(0, json.length - 1)),
      count: held.length,
      next,
      entries: held.map(({ entry }) => entry),
    };
  }

  /** Once closed, nobody waits for an append any more. */
  get closed(): boolean {
    return this.closing;
  }

  /** Resolves at the next append, or after `timeoutMs`, or at once when the log is closed. */
  waitForAppend(timeoutMs: number): Promise<void> {
    if (this.closing) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((waiter) => waiter !== wake);
        resolve();
      }, timeoutMs);
      const wake = (): void => {
        clearTimeout(timer);
        resolve();
      };
      this.waiters.push(wake);
    });
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.settled();
    await this.writing;
    for (const wake of this.waiters) wake();
    this.waiters = [];
    await this.handle?.close();
    this.handle = null;
    if (this.readFd >= 0) closeSync(this.readFd);
    this.readFd = -1;
  }

  private index(appended: FeedEntry, at: number, length: number): void {
    const previous = this.latestByNode.get(appended.nodeId);
    const widened = previous ? withFormerRelays(appended, previous) : appended;
    const entry = this.interned.entry(widened, previous);
    if (previous) {
      this.entriesBySeq.delete(previous.seq);
      this.superseded++;
    }
    const fresh: string[] = [];
    this.references.replace(previous, entry, fresh);
    this.latestByNode.set(entry.nodeId, entry);
    this.entriesBySeq.set(entry.seq, {
      entry,
      at: widened === appended ? at : -1,
      length,
      fresh: fresh.length > 0 ? fresh : NO_DIGESTS,
    });
    // Each relay named once (its list's last seq is this one when it was named already).
    for (const relays of [entry.path, entry.previousPath])
      for (const relay of relays) {
        const seqs = this.listFor(relay);
        if (seqs[seqs.length - 1] !== entry.seq) seqs.push(entry.seq);
      }
    this.position = Math.max(this.position, entry.seq);
    if (entry.revision > this.newestRevision) this.newestRevision = entry.revision;
  }

  private listFor(relay: string): number[] {
    let seqs = this.seqsByRelay.get(relay);
    if (!seqs) {
      seqs = [];
      this.seqsByRelay.set(relay, seqs);
    }
    return seqs;
  }

  private compactWhenDue(): void {
    if (
      this.compacting ||
      this.closing ||
      this.superseded < (this.options.compactAfter ?? Math.max(10_000, this.latestByNode.size))
    )
      return;
    // The entries are written: a rewrite that fails (a full disk) is no failure of an append.
    this.compacting = this.compact()
      .catch((error: unknown) => this.options.health?.writeFailed('feed', error))
      .finally(() => {
        this.compacting = null;
      });
  }

  /**
   * Rewrites the file with each node's latest entry only: the live lines as of now are copied
   * aside while appends go on, then those appended meanwhile, then the copy is renamed over it.
   */
  private async compact(): Promise<void> {
    let snapshot: Held[] = [];
    let copiedUpTo = 0;
    let supersededThen = 0;
    let positionThen = 0;
    await this.serially(async () => {
      snapshot = [...this.entriesBySeq.values()];
      copiedUpTo = this.size;
      supersededThen = this.superseded;
      positionThen = this.position;
    });
    const staging = `${this.file}.compacting`;
    const source = await open(this.file, 'r');
    const target = await open(staging, 'w');
    let renamed = false;
    try {
      const writer = new StagingWriter(source, target);
      const movedTo: number[] = [];
      /** The lines written anew (entries that were not their line), by their index in the snapshot. */
      const written = new Map<number, number>();
      for (const [index, held] of snapshot.entries()) {
        movedTo.push(writer.size);
        if (held.at >= 0) await writer.copy(held.at, held.length);
        else {
          const line = Buffer.from(`${JSON.stringify(held.entry)}\n`);
          written.set(index, line.length);
          await writer.add(line);
        }
      }
      await writer.add(Buffer.from(`${JSON.stringify({ next: positionThen })}\n`));
      await writer.flush();
      await this.serially(async () => {
        const shift = writer.size - copiedUpTo;
        await writer.copy(copiedUpTo, this.size - copiedUpTo);
        await writer.flush();
        await target.datasync();
        // Opened before the rename, so that nothing after it can fail: they are the file once renamed.
        const handle = await open(staging, 'a');
        const readFd = openSync(staging, 'r');
        try {
          await target.close();
          await rename(staging, this.file);
        } catch (error) {
          await handle.close();
          closeSync(readFd);
          throw error;
        }
        renamed = true;
        // Renamed over the file while the old handles are open (they hold the old file): no moment without one.
        const previous = this.handle;
        const previousReadFd = this.readFd;
        this.handle = handle;
        this.readFd = readFd;
        this.size = writer.size;
        for (const [index, held] of snapshot.entries()) {
          held.at = movedTo[index] ?? -1;
          held.length = written.get(index) ?? held.length;
        }
        for (const held of this.entriesBySeq.values()) if (held.at >= copiedUpTo) held.at += shift;
        this.superseded -= supersededThen;
        for (const [relay, seqs] of this.seqsByRelay) {
          const live = seqs.filter((seq) => this.entriesBySeq.has(seq));
          if (live.length > 0) this.seqsByRelay.set(relay, live);
          else this.seqsByRelay.delete(relay);
        }
        this.interned = this.interned.fresh();
        await previous?.close();
        if (previousReadFd >= 0) closeSync(previousReadFd);
        fsyncDirectory(dirname(this.file));
      });
    } catch (error) {
      if (!renamed) {
        await target.close().catch(() => undefined);
        await rm(staging, { force: true });
      }
      throw error;
    } finally {
      await source.close();
    }
  }

  /** Whole lines at the end of the file, flushed when durable; a part written is cut off again. */
  private async write(bytes: Buffer): Promise<void> {
    const handle = this.openHandle();
    try {
      // On the event loop: an append to the page cache costs microseconds, a trip through the
      // thread pool a wake-up of the loop (its flush, which waits for the disk, stays off it).
      for (let done = 0; done < bytes.length;) done += writeSync(handle.fd, bytes, done, bytes.length - done);
      if (this.options.durable) await handle.datasync();
    } catch (error) {
      await handle.truncate(this.size).catch(() => undefined);
      this.options.health?.writeFailed('feed', error);
      throw error;
    }
    this.size += bytes.length;
    this.options.health?.writeSucceeded('feed');
  }

  private openHandle(): FileHandle {
    if (!this.handle) throw new Error(`the feed log ${this.file} is closed`);
    return this.handle;
  }

  private serially(work: () => Promise<void>): Promise<void> {
    const run = this.writing.then(work);
    this.writing = run.catch(() => undefined);
    return run;
  }
}

/**
 * The entry that supersedes `previous`, also naming in `previousPath` the relays `previous` named
 * (those that may still hold the node) that its own path leaves out. A relay that never read
 * `previous` (a node moved off it, then removed) otherwise never hears that it must drop the node.
 */
function withFormerRelays(entry: FeedEntry, previous: FeedEntry): FeedEntry {
  let former: string[] | null = null;
  // Paths are a few relays long: looked through, not put in sets (this runs for every entry).
  for (const relays of [previous.path, previous.previousPath])
    for (const relay of relays)
      if (!entry.path.includes(relay) && !entry.previousPath.includes(relay) && !former?.includes(relay))
        (former ??= []).push(relay);
  return former === null ? entry : { ...entry, previousPath: [...entry.previousPath, ...former] };
}

/** Shares equal strings, relay paths and file references between entries. */
class Interner {
  private readonly strings = new Map<string, string>();
  /** By digest: the file, or the files by path when its content is at several paths. */
  private readonly files = new Map<string, FeedFile | Map<string, FeedFile>>();

  /** Relay paths are kept across `fresh`: the blob references compare them by identity. */
  constructor(private readonly paths = new Map<string, string[]>()) {}

  /**
   * Forgets the strings and files (those of superseded entries would pile up), keeping the paths.
   * Entries held keep theirs, and pass them on to their nodes' next entries.
   */
  fresh(): Interner {
    return new Interner(this.paths);
  }

  /** The entry with shared parts; a file equal to the one at its place in `previous` is that one. */
  entry(entry: FeedEntry, previous: FeedEntry | undefined): FeedEntry {
    const bundle = entry.bundle;
    const before = previous?.bundle?.files;
    return {
      seq: entry.seq,
      nodeId: entry.nodeId,
      path: this.path(entry.path),
      previousPath: this.path(entry.previousPath),
      revision: entry.revision,
      bundle: bundle && {
        hash: bundle.hash,
        revision: bundle.revision,
        committedAt: this.string(bundle.committedAt),
        generatedAt: bundle.generatedAt,
        distributedAt: bundle.distributedAt,
        files: bundle.files.map((file, index) => {
          const same = before?.[index];
          return same && same.sha256 === file.sha256 && same.path === file.path ? same : this.file(file);
        }),
        ...(bundle.nodeKey === undefined ? {} : { nodeKey: bundle.nodeKey }),
        ...(bundle.tokenDigest === undefined ? {} : { tokenDigest: bundle.tokenDigest }),
        ...(bundle.catchUp ? { catchUp: true } : {}),
      },
    };
  }

  private string(text: string): string {
    const known = this.strings.get(text);
    if (known !== undefined) return known;
    this.strings.set(text, text);
    return text;
  }

  private path(relays: readonly string[]): string[] {
    const key = relays.join('\n');
    const known = this.paths.get(key);
    if (known) return known;
    const path = relays.map((relay) => this.string(relay));
    this.paths.set(key, path);
    return path;
  }

  private file(file: FeedFile): FeedFile {
    // One lookup by digest: a content is nearly always at one path (by path when at several).
    const known = this.files.get(file.sha256);
    if (known instanceof Map) {
      const atPath = known.get(file.path);
      if (atPath) return atPath;
    } else if (known?.path === file.path) return known;
    const interned: FeedFile = { path: this.string(file.path), sha256: file.sha256 };
    if (known === undefined) this.files.set(file.sha256, interned);
    else if (known instanceof Map) known.set(interned.path, interned);
    else
      this.files.set(
        file.sha256,
        new Map([
          [known.path, known],
          [interned.path, interned],
        ]),
      );
    return interned;
  }
}

/**
 * Writes the rewritten file: lines copied from the old one, which a window of it read ahead gives
 * (a compaction after steady churn copies each node's latest line from all over the file: a read
 * and a write of the thread pool per line cost half a second of CPU for a 10,000-node feed, the
 * window a read and a write per MiB), and lines given whole, gathered and written a chunk at a time.
 */
class StagingWriter {
  size = 0;
  /** The old file's bytes from `windowStart` to `windowEnd`, as read ahead. */
  private readonly window = Buffer.allocUnsafe(COPY_CHUNK);
  private windowStart = 0;
  private windowEnd = 0;
  /** Bytes of the new file not written yet. */
  private readonly pending = Buffer.allocUnsafe(COPY_CHUNK);
  private pendingLength = 0;

  constructor(
    private readonly source: FileHandle,
    private readonly target: FileHandle,
  ) {}

  async copy(at: number, length: number): Promise<void> {
    if (length <= 0) return;
    this.size += length;
    let from = at;
    let left = length;
    while (left > 0) {
      if (from < this.windowStart || from >= this.windowEnd) await this.readAhead(from);
      const piece = Math.min(left, this.windowEnd - from);
      await this.put(this.window, from - this.windowStart, piece);
      from += piece;
      left -= piece;
    }
  }

  async add(bytes: Buffer): Promise<void> {
    this.size += bytes.length;
    await this.put(bytes, 0, bytes.length);
  }

  /**
   * Writes what is pending, and forgets what was read ahead: the old file may have grown since
   * (appends go on beside the copy), and what is read after this is read anew.
   */
  async flush(): Promise<void> {
    if (this.pendingLength > 0) await this.writeAll(this.pending.subarray(0, this.pendingLength));
    this.pendingLength = 0;
    this.windowStart = 0;
    this.windowEnd = 0;
  }

  private async readAhead(at: number): Promise<void> {
    const { bytesRead } = await this.source.read(this.window, 0, this.window.length, at);
    if (bytesRead === 0) throw new Error('the feed log ended before a line it holds');
    this.windowStart = at;
    this.windowEnd = at + bytesRead;
  }

  private async put(bytes: Buffer, offset: number, length: number): Promise<void> {
    let from = offset;
    let left = length;
    while (left > 0) {
      const piece = Math.min(left, this.pending.length - this.pendingLength);
      bytes.copy(this.pending, this.pendingLength, from, from + piece);
      this.pendingLength += piece;
      from += piece;
      left -= piece;
      if (this.pendingLength === this.pending.length) {
        await this.writeAll(this.pending);
        this.pendingLength = 0;
      }
    }
  }

  private async writeAll(bytes: Buffer): Promise<void> {
    for (let done = 0; done < bytes.length;)
      done += (await this.target.write(bytes, done, bytes.length - done)).bytesWritten;
  }
}
