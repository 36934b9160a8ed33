import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statfsSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A small file system of its own (a tmpfs) for the disk-full tests: `fill` takes all its space but
 * `leave` bytes, `free` gives it back. Mounting needs root (the test machines run tests as root);
 * without it the test fails, naming why: a disk-full test that silently did not run proves nothing.
 */
export class SmallDisk {
  private constructor(readonly path: string) {}

  static mount(bytes: number): SmallDisk {
    const path = mkdtempSync(join(tmpdir(), 'policygen-small-disk-'));
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes}`, 'tmpfs', path], { stdio: 'pipe' });
    } catch (error) {
      rmSync(path, { recursive: true, force: true });
      const stderr = String((error as { stderr?: Buffer }).stderr ?? '').trim();
      throw new Error(
        `could not mount a ${bytes}-byte tmpfs at ${path} for a disk-full test (it needs root, or CAP_SYS_ADMIN): ${stderr || (error as Error).message}`,
      );
    }
    return new SmallDisk(path);
  }

  get freeBytes(): number {
    const stats = statfsSync(this.path);
    return stats.bavail * stats.bsize;
  }

  /** Takes the free space but `leave` bytes, with a file that `free` removes. */
  fill(leave = 0): void {
    writeFileSync(join(this.path, 'filler'), Buffer.alloc(Math.max(0, this.freeBytes - leave)));
  }

  free(): void {
    unlinkSync(join(this.path, 'filler'));
  }

  unmount(): void {
    execFileSync('umount', [this.path], { stdio: 'pipe' });
    rmSync(this.path, { recursive: true, force: true });
  }
}
