import type { FileHandle } from 'node:fs/promises';
import { mkdir, open, readFile, rename } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { FeedEntry } from '../feed';
import { feedEntrySchema } from '../feed';

export interface FeedLogOptions {
  /** Flush each append to the disk before it resolves (the root's log: its source commits after). */
  readonly durable?: boolean;
  /** Rewrite the file once it holds this many superseded lines (default 10,000). */
  readonly compactAfter?: number;
}

export interface FeedSlice {
  readonly entries: readonly FeedEntry[];
  readonly next: number;
}

/**
 * An ordered feed of node entries, kept as an append-only JSON-lines file and indexed in memory by
 * node and by relay. Only each node's latest entry matters; older ones are dropped when the file
 * is rewritten, their relays folded into the latest entry's `previousPath` so that a relay whose
 * cursor is older still learns that a node left it.
 */
export class FeedLog {
  private readonly latestByNode = new Map<string, FeedEntry>();
  /** Relays that held a node in entries since superseded. */
  private readonly formerRelays = new Map<string, Set<string>>();
  private readonly entriesBySeq = new Map<number, FeedEntry>();
  private readonly seqsByRelay = new Map<string, number[]>();
  private position = 0;
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
    let text = '';
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    const lines = text.split('\n');
    // A line without its newline was being written when the process stopped: it never counted.
    lines.pop();
    for (const [index, line] of lines.entries()) {
      const record = JSON.parse(line) as { readonly next?: number };
      if (typeof record.next === 'number') log.position = Math.max(log.position, record.next);
      else {
        const parsed = feedEntrySchema.safeParse(record);
        if (!parsed.success)
          throw new Error(`${file}:${index + 1}: not a feed entry: ${parsed.error.message}`);
        log.index(parsed.data);
      }
    }
    log.handle = await open(file, 'a');
    if (text.length > 0 && !text.endsWith('\n')) await log.handle.truncate(text.lastIndexOf('\n') + 1);
    return log;
  }

  /** The position up to which the feed is known: the last entry's seq, or further (`advance`). */
  get cursor(): number {
    return this.position;
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
    await this.serially(async () => {
      const handle = this.openHandle();
      await handle.write(text);
      if (this.options.durable) await handle.datasync();
    });
    for (const entry of entries) this.index(entry);
    if (mark !== undefined) this.position = mark;
    if (this.superseded >= (this.options.compactAfter ?? 10_000)) await this.compact();
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
    for (let index = low; index < seqs.length && entries.length < limit; index++) {
      const entry = this.entriesBySeq.get(seqs[index] ?? 0);
      if (entry) entries.push(entry);
    }
    const complete = low + entries.length >= seqs.length;
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

  private index(entry: FeedEntry): void {
    const previous = this.latestByNode.get(entry.nodeId);
    if (previous) {
      this.entriesBySeq.delete(previous.seq);
      this.superseded++;
      const former = this.formerRelays.get(entry.nodeId) ?? new Set<string>();
      for (const relay of [...previous.path, ...previous.previousPath]) former.add(relay);
      this.formerRelays.set(entry.nodeId, former);
    }
    this.latestByNode.set(entry.nodeId, entry);
    this.entriesBySeq.set(entry.seq, entry);
    for (const relay of new Set([...entry.path, ...entry.previousPath])) {
      const seqs = this.seqsByRelay.get(relay) ?? [];
      seqs.push(entry.seq);
      this.seqsByRelay.set(relay, seqs);
    }
    this.position = Math.max(this.position, entry.seq);
  }

  /** Rewrites the file with each node's latest entry only, aside then renamed. */
  private async compact(): Promise<void> {
    await this.serially(async () => {
      const latest = [...this.latestByNode.values()]
        .map((entry): FeedEntry => {
          const former = this.formerRelays.get(entry.nodeId);
          if (!former) return entry;
          return { ...entry, previousPath: [...new Set([...entry.previousPath, ...former])] };
        })
        .sort((a, b) => a.seq - b.seq);
      const staging = `${this.file}.compacting`;
      const handle = await open(staging, 'w');
      try {
        await handle.write(
          latest.map((entry) => `${JSON.stringify(entry)}\n`).join('') +
            `${JSON.stringify({ next: this.position })}\n`,
        );
        await handle.datasync();
      } finally {
        await handle.close();
      }
      await this.handle?.close();
      await rename(staging, this.file);
      this.handle = await open(this.file, 'a');
      this.latestByNode.clear();
      this.entriesBySeq.clear();
      this.seqsByRelay.clear();
      this.formerRelays.clear();
      const position = this.position;
      for (const entry of latest) this.index(entry);
      this.position = position;
      this.superseded = 0;
    });
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
