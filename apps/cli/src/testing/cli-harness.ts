import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';

/** The workspace root: the nearest directory above this file holding nx.json. */
export function workspaceRoot(): string {
  let directory = __dirname;
  while (!existsSync(join(directory, 'nx.json'))) {
    const parent = dirname(directory);
    if (parent === directory) throw new Error(`no nx.json above ${__dirname}`);
    directory = parent;
  }
  return directory;
}

export const ROOT = workspaceRoot();
export const CLI = join(ROOT, 'dist', 'cli', 'policygen.js');
/** The shared examples of the contract (`../shared/examples` next to the repository). */
export const EXAMPLES = join(ROOT, '..', 'shared', 'examples');

/** Bundles the CLI as `npm run build` does (the bundler writes atomically: suites may build at once). */
export function buildCli(): void {
  execFileSync(process.execPath, ['tools/build/bundle-cli.mjs'], { cwd: ROOT, stdio: 'pipe' });
}

export interface CliResult {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `node dist/cli/policygen.js ...args` with pipes (not a terminal) and NO_COLOR set. */
export function runCli(
  args: readonly string[],
  options: {
    readonly cwd?: string;
    readonly env?: Readonly<Record<string, string>>;
    readonly script?: string;
  } = {},
): CliResult {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', ...options.env };
  delete env['FORCE_COLOR'];
  const result = spawnSync(process.execPath, [options.script ?? CLI, ...args], {
    cwd: options.cwd ?? ROOT,
    env,
    encoding: 'utf8',
    timeout: 120_000,
  });
  if (result.error) throw result.error;
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

export function tempDir(name: string): string {
  return mkdtempSync(join(tmpdir(), `policygen-cli-${name}-`));
}

export function removeDir(directory: string): void {
  rmSync(directory, { recursive: true, force: true });
}

export function writeJson(path: string, value: unknown): string {
  writeFileSync(path, `${JSON.stringify(value, null, 2)}\n`);
  return path;
}

/** Every file under a directory, as sorted paths relative to it with `/` separators. */
export function listFiles(directory: string): string[] {
  const files: string[] = [];
  const walk = (current: string): void => {
    for (const entry of readdirSync(current)) {
      const path = join(current, entry);
      if (statSync(path).isDirectory()) walk(path);
      else files.push(relative(directory, path).split('\\').join('/'));
    }
  };
  walk(directory);
  return files.sort();
}

/** A stack trace line, as Node prints them. */
export const STACK_LINE = /^\s+at .+/m;
// eslint-disable-next-line no-control-regex
export const ANSI_ESCAPE = /\u001b\[/;
