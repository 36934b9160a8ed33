import type { FileHandle } from 'node:fs/promises';
import { createReadStream, existsSync } from 'node:fs';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { FeedEntry, FeedFile } from '../feed';
import { feedEntrySchema } from '../feed';
import { BlobReferences } from './blob-references';
import type { DiskHealth } from './disk-health';
import { fsyncDirectory } from '@policygen/service-kit';

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
 */
export class FeedLog {
  private readonly latestByNode = new Map<string, FeedEntry>();
  private readonly entriesBySeq = new Map<number, FeedEntry>();
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
  private writing: Promise<void> = Promise.resolve();
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
          const problem = this.load1(data.toString('utf8', start, newline));
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
  private load1(line: string): string | null {
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
    this.index(parsed.data);
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

  /** Appends entries in seq order (each after the cursor). */
  async append(entries: readonly FeedEntry[], next?: number): Promise<void> {
    if (entries.length === 0 && (next === undefined || next <= this.position)) return;
    let last = this.position;
    for (const entry of entries) {
      if (entry.seq <= last) throw new Error(`feed entry ${entry.seq} is not after ${last}`);
      last = entry.seq;
    }
    const mark = next !== undefined && next > last ? next : undefined;
    const text =
      entries.map((entry) => `${JSON.stringify(entry)}\n`).join('') +
      (mark === undefined ? '' : `${JSON.stringify({ next: mark })}\n`);
    await this.serially(() => this.write(Buffer.from(text)));
    for (const entry of entries) this.index(entry);
    if (mark !== undefined) this.position = mark;
    if (this.superseded >= (this.options.compactAfter ?? Math.max(10_000, this.latestByNode.size)))
      // The entries are written: a rewrite that fails (a full disk) is no failure of the append.
      await this.compact().catch((error: unknown) => this.options.health?.writeFailed('feed', error));
    const waiting = this.waiters;
    this.waiters = [];
    for (const wake of waiting) wake();
  }

  /** Moves the cursor without entries: nothing up to `next` concerns this log. */
  async advance(next: number): Promise<void> {
    await this.append([], next);
  }

  /** The entries after a cursor that concern a relay (keep or drop a node), in order. */
  after(cursor: number, relayId: string, limit: number): FeedSlice {
    const seqs = this.seqsByRelay.get(relayId) ?? [];
    let low = 0;
    let high = seqs.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if ((seqs[middle] ?? 0) <= cursor) low = middle + 1;
      else high = middle;
    }
    const entries: FeedEntry[] = [];
    let index = low;
    for (; index < seqs.length && entries.length < limit; index++) {
      const entry = this.entriesBySeq.get(seqs[index] ?? 0);
      if (entry) entries.push(entry);
    }
    // Superseded seqs left at the end of the relay's list say nothing: the page is complete.
    while (index < seqs.length && !this.entriesBySeq.has(seqs[index] ?? 0)) index++;
    const complete = index >= seqs.length;
    const next = complete ? Math.max(cursor, this.position) : (entries[entries.length - 1]?.seq ?? cursor);
    return { entries, next };
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
    await this.writing;
    for (const wake of this.waiters) wake();
    this.waiters = [];
    await this.handle?.close();
    this.handle = null;
  }

  private index(appended: FeedEntry): void {
    const previous = this.latestByNode.get(appended.nodeId);
    const entry = this.interned.entry(previous ? withFormerRelays(appended, previous) : appended);
    if (previous) {
      this.entriesBySeq.delete(previous.seq);
      this.references.remove(previous);
      this.superseded++;
    }
    this.references.add(entry);
    this.latestByNode.set(entry.nodeId, entry);
    this.entriesBySeq.set(entry.seq, entry);
    for (const relay of new Set([...entry.path, ...entry.previousPath])) {
      const seqs = this.seqsByRelay.get(relay) ?? [];
      seqs.push(entry.seq);
      this.seqsByRelay.set(relay, seqs);
    }
    this.position = Math.max(this.position, entry.seq);
    if (entry.revision > this.newestRevision) this.newestRevision = entry.revision;
  }

  /** Rewrites the file with each node's latest entry only, aside then renamed. */
  private async compact(): Promise<void> {
    await this.serially(async () => {
      const latest = [...this.latestByNode.values()].sort((a, b) => a.seq - b.seq);
      const staging = `${this.file}.compacting`;
      const handle = await open(staging, 'w');
      let size = 0;
      try {
        // In slices: the whole file would not fit in one string at 100k nodes.
        for (let start = 0; start <= latest.length; start += 1_000) {
          const lines =
            latest
              .slice(start, start + 1_000)
              .map((entry) => `${JSON.stringify(entry)}\n`)
              .join('') +
            (start + 1_000 > latest.length ? `${JSON.stringify({ next: this.position })}\n` : '');
          const { bytesWritten } = await handle.write(lines);
          if (bytesWritten !== Buffer.byteLength(lines)) throw new Error(`${staging}: a short write`);
          size += bytesWritten;
        }
        await handle.datasync();
      } catch (error) {
        await handle.close();
        await rm(staging, { force: true });
        throw error;
      }
      await handle.close();
      // Renamed over the file while the old handle is open (it holds the old file): no moment without one.
      await rename(staging, this.file);
      fsyncDirectory(dirname(this.file));
      const previous = this.handle;
      this.handle = await open(this.file, 'a');
      await previous?.close();
      this.size = size;
      this.latestByNode.clear();
      this.entriesBySeq.clear();
      this.seqsByRelay.clear();
      this.references.clear();
      this.interned = new Interner();
      const position = this.position;
      for (const entry of latest) this.index(entry);
      this.position = position;
      this.superseded = 0;
    });
  }

  /** Whole lines at the end of the file, flushed when durable; a part written is cut off again. */
  private async write(bytes: Buffer): Promise<void> {
    const handle = this.openHandle();
    try {
      for (let done = 0; done < bytes.length;)
        done += (await handle.write(bytes, done, bytes.length - done)).bytesWritten;
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
  const named = new Set([...entry.path, ...entry.previousPath]);
  const former = [...new Set([...previous.path, ...previous.previousPath])].filter(
    (relay) => !named.has(relay),
  );
  return former.length === 0 ? entry : { ...entry, previousPath: [...entry.previousPath, ...former] };
}

/** Shares equal strings, relay paths and file references between entries. */
class Interner {
  private readonly strings = new Map<string, string>();
  private readonly paths = new Map<string, string[]>();
  /** By path, then by digest. */
  private readonly files = new Map<string, Map<string, FeedFile>>();

  entry(entry: FeedEntry): FeedEntry {
    const bundle = entry.bundle;
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
        files: bundle.files.map((file) => this.file(file)),
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
    const path = this.string(file.path);
    let byDigest = this.files.get(path);
    if (!byDigest) {
      byDigest = new Map();
      this.files.set(path, byDigest);
    }
    const known = byDigest.get(file.sha256);
    if (known) return known;
    const interned = { path, sha256: file.sha256 };
    byDigest.set(file.sha256, interned);
    return interned;
  }
}
