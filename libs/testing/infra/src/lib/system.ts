import { execFile } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** The absolute path of an executable on PATH, if there is one. */
export function findExecutable(command: string, extraDirs: readonly string[] = []): string | undefined {
  const dirs = [...(process.env['PATH'] ?? '').split(delimiter), ...extraDirs];
  for (const dir of dirs) {
    if (!dir) continue;
    const candidate = join(dir, command);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** Runs a command to completion and returns its standard output; rejects on failure or after timeoutMs. */
export async function run(
  command: string,
  args: readonly string[],
  options: { timeoutMs: number },
): Promise<string> {
  const { stdout } = await execFileAsync(command, [...args], {
    timeout: options.timeoutMs,
    maxBuffer: 16 * 1024 * 1024,
  });
  return stdout;
}

/** The repository root: the nearest folder above this file that holds nx.json. */
export function workspaceRoot(): string {
  let dir = __dirname;
  while (!existsSync(join(dir, 'nx.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no nx.json above ${__dirname}`);
    dir = parent;
  }
  return dir;
}
