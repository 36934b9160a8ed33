import { closeSync, fsyncSync, mkdirSync, openSync, rmSync, writeFileSync, renameSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Flushes a directory's entries (a file created, renamed or removed in it) to the disk: without it,
 * a power loss can forget a rename that the file's own fsync made durable.
 */
export function fsyncDirectory(directory: string): void {
  const fd = openSync(directory, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The staging name `writeFileDurably` writes a file under before renaming it: a leftover is a torn write. */
export function stagingNameOf(file: string): string {
  return `${file}.tmp`;
}

/**
 * Replaces a file whole, crash-safe: written to a staging file in the same directory (created if
 * missing), flushed, renamed over the file, and the directory flushed. A reader (or a restart) sees
 * the old content or the new, never a part. A failed write (ENOSPC) leaves the old file and no
 * staging file. `mode` is the new file's (a leftover staging file is removed first, so it applies).
 */
export function writeFileDurably(
  file: string,
  content: string | Buffer,
  options: { readonly mode?: number } = {},
): void {
  const staging = stagingNameOf(file);
  mkdirSync(dirname(file), { recursive: true });
  rmSync(staging, { force: true });
  try {
    const fd = openSync(staging, 'wx', options.mode ?? 0o644);
    try {
      writeFileSync(fd, content);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(staging, file);
  } catch (error) {
    rmSync(staging, { force: true });
    throw error;
  }
  fsyncDirectory(dirname(file));
}
