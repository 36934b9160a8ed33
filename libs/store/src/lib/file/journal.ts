import type { FileHandle } from 'node:fs/promises';
import { mkdir, open, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { crc32 } from 'node:zlib';
import { fsyncDirectory } from '@policygen/service-kit';

/** What opening a journal found, and mended. */
export interface JournalRecovery {
  /** Complete records read. */
  readonly records: number;
  /** Bytes of a last record cut short by a crash, dropped from the end of the file (0: none). */
  readonly tornBytes: number;
}

export interface OpenedJournal<T> {
  readonly journal: Journal;
  /** Every complete record, oldest first. */
  readonly records: readonly T[];
  readonly recovery: JournalRecovery;
}

const NEWLINE = 0x0a;
const LINE = /^([0-9a-f]{8}) (.*)$/s;

/**
 * An append-only file of JSON records, one a line, each after the CRC-32 of its text:
 * `<crc32, 8 hex digits> <json>\n`. Appends are written one after the other; a durable one resolves
 * once it is on the disk (fdatasync), which also flushes every append before it. So a crash can
 * only leave the last record cut short, or the file's end unwritten (zeros): opening drops such a
 * tail and says how long it was. A bad record followed by good ones is damage, not a crash:
 * opening refuses it rather than lose the records after it. A failed append (a full disk) is
 * cut off again, so that the next one does not follow a partial line.
 */
export class Journal {
  private readonly writes = new Turns();
  private broken: Error | null = null;

  private constructor(
    readonly file: string,
    private handle: FileHandle | null,
    private size: number,
  ) {}

  static async open<T>(file: string): Promise<OpenedJournal<T>> {
    await mkdir(dirname(file), { recursive: true });
    let content: Buffer;
    let created = false;
    try {
      content = await readFile(file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      content = Buffer.alloc(0);
      created = true;
    }
    const { records, complete } = parseJournal<T>(content, file);
    // Its records may name secrets (a node's properties): only the owner reads it.
    const handle = await open(file, 'a', 0o600);
    if (created) fsyncDirectory(dirname(file));
    const tornBytes = content.length - complete;
    if (tornBytes > 0) {
      await handle.truncate(complete);
      await handle.sync();
    }
    return {
      journal: new Journal(file, handle, complete),
      records,
      recovery: { records: records.length, tornBytes },
    };
  }

  /** Appends a record; `durable`: resolves once it is on the disk. */
  append(record: unknown, options: { readonly durable: boolean }): Promise<void> {
    const text = JSON.stringify(record);
    const line = Buffer.from(`${crc32(text).toString(16).padStart(8, '0')} ${text}\n`);
    return this.writes.run(async () => {
      if (this.broken) throw this.broken;
      const handle = this.handle;
      if (!handle) throw new Error(`the journal ${this.file} is closed`);
      try {
        await handle.write(line);
        if (options.durable) await handle.datasync();
        this.size += line.length;
      } catch (error) {
        await this.cutBack(handle, error as Error);
        throw error;
      }
    });
  }

  async close(): Promise<void> {
    await this.writes.idle();
    await this.handle?.close();
    this.handle = null;
  }

  /** After a failed append: the file back to its last complete record, or no more appends. */
  private async cutBack(handle: FileHandle, cause: Error): Promise<void> {
    try {
      await handle.truncate(this.size);
      await handle.sync();
    } catch {
      this.broken = new Error(
        `the journal ${this.file} could not be cut back after a failed write (${cause.message}): restart to repair it`,
      );
    }
  }
}

/** The complete records of a journal's content, and the length they take (the rest is a torn tail). */
export function parseJournal<T>(content: Buffer, file: string): { records: T[]; complete: number } {
  const records: T[] = [];
  let complete = 0;
  let badLine: { line: number; reason: string } | null = null;
  let lineNumber = 0;
  for (let start = 0; start < content.length;) {
    const newline = content.indexOf(NEWLINE, start);
    if (newline === -1) break;
    lineNumber++;
    const parsed = parseLine<T>(content.toString('utf8', start, newline));
    start = newline + 1;
    if (!parsed.ok) {
      badLine ??= { line: lineNumber, reason: parsed.reason };
      continue;
    }
    if (badLine)
      throw new Error(
        `${file}:${badLine.line}: ${badLine.reason}, and complete records follow it: the journal is damaged, not torn by a crash; restore it from a backup`,
      );
    records.push(parsed.record);
    complete = start;
  }
  return { records, complete };
}

function parseLine<T>(line: string): { ok: true; record: T } | { ok: false; reason: string } {
  const match = LINE.exec(line);
  if (!match) return { ok: false, reason: 'not a journal record' };
  const [, checksum, text] = match as unknown as [string, string, string];
  if (crc32(text).toString(16).padStart(8, '0') !== checksum)
    return { ok: false, reason: 'its checksum does not match' };
  try {
    return { ok: true, record: JSON.parse(text) as T };
  } catch {
    return { ok: false, reason: 'not JSON' };
  }
}

/** Tasks run one after the other, in the order given; one failing does not stop the next. */
export class Turns {
  private last: Promise<unknown> = Promise.resolve();

  run<T>(task: () => Promise<T>): Promise<T> {
    const run = this.last.then(task);
    this.last = run.catch(() => undefined);
    return run;
  }

  /** Resolves once every task given so far is done. */
  async idle(): Promise<void> {
    await this.last;
  }
}
