import { spawnSync } from 'node:child_process';
import { accessSync, constants, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';

/** Where a generated node tree keeps what the agent reads as its inputs directory. */
export const TREE_ROOT = 'rules/cfengine-community';

export class CfEngineNotFoundError extends Error {
  constructor(command: string) {
    super(
      `${command} is not on PATH: install Debian package cfengine3 (CFEngine 3.21; \`npm run setup:system\` does). ` +
        'The runtime tests never skip.',
    );
  }
}

/** An executable of CFEngine on PATH; throws when it is missing: these tests never skip. */
export function requireCfEngine(command: 'cf-agent' | 'cf-promises'): string {
  for (const directory of (process.env['PATH'] ?? '').split(delimiter)) {
    if (directory === '') continue;
    const candidate = join(directory, command);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this directory
    }
  }
  throw new CfEngineNotFoundError(command);
}

export interface AgentRunOptions {
  /**
   * Files of the node's local override directory (`/var/rudder/local/properties.d` on a real
   * node), by file name: written to the run's own directory and named to the policy through
   * CFEngine's augments file (`def.json`), so the system's directory is never read.
   */
  readonly localProperties?: Readonly<Record<string, string>>;
  /** Files written before the run, by absolute path below the run's directory (`{dir}` is replaced). */
  readonly files?: Readonly<Record<string, string>>;
  /** Kill the agent after this long (default 60 s). */
  readonly timeoutMs?: number;
}

export interface AgentRun {
  /** The run's own work directory: `inputs/` holds the tree, `local/` the override files. */
  readonly dir: string;
  readonly status: number | null;
  readonly output: string;
  /** The text of every `R:` line (reports promises), in the order the agent printed them. */
  readonly reports: readonly string[];
  /** `cf-promises --full-check` on the tree: null when it accepted it, else what it said. */
  readonly rejected: string | null;
  /** The text of every command output line (`Q: "...": text`), in the order the commands ran. */
  readonly commandOutput: readonly string[];
  /** Removes the run's directory. */
  remove(): void;
}

/**
 * Runs a node's generated tree once with the real `cf-agent`, in a work directory of its own
 * (`cf-agent -K -I -w DIR`): nothing of the system's `/var/cfengine` or `/var/rudder` is read or
 * written. `tree` maps paths of the generated bundle (`rules/cfengine-community/...`) to contents;
 * other paths (the manifest) are left out, as a relay would not give them to the agent.
 */
export function runAgent(tree: ReadonlyMap<string, string>, options: AgentRunOptions = {}): AgentRun {
  const agent = requireCfEngine('cf-agent');
  const promises = requireCfEngine('cf-promises');
  const dir = mkdtempSync(join(tmpdir(), 'policygen-agent-'));
  const inputs = join(dir, 'inputs');
  const local = join(dir, 'local', 'properties.d');
  mkdirSync(local, { recursive: true });
  for (const [path, content] of tree) {
    if (!path.startsWith(`${TREE_ROOT}/`)) continue;
    const target = join(inputs, path.slice(TREE_ROOT.length + 1));
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, content);
  }
  writeFileSync(
    join(inputs, 'def.json'),
    `${JSON.stringify({ vars: { policygen_local_properties_dir: local } })}\n`,
  );
  for (const [name, content] of Object.entries(options.localProperties ?? {}))
    writeFileSync(join(local, name), content);
  for (const [path, content] of Object.entries(options.files ?? {})) {
    const target = path.replaceAll('{dir}', dir);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, content);
  }
  // The agent validates its inputs with the cf-promises of its work directory.
  mkdirSync(join(dir, 'bin'));
  symlinkSync(promises, join(dir, 'bin', 'cf-promises'));
  const check = spawnSync(promises, ['--full-check', '-w', dir, '-f', join(inputs, 'promises.cf')], {
    encoding: 'utf8',
    timeout: options.timeoutMs ?? 60_000,
  });
  const checkOutput = `${check.stdout ?? ''}${check.stderr ?? ''}`;
  // cf-promises exits 0 on some errors it finds while evaluating (illegal variable names).
  const rejected =
    check.status === 0 && !/\berror:/i.test(checkOutput)
      ? null
      : checkOutput.trim() || `exit ${check.status}`;
  const result = spawnSync(agent, ['-K', '-I', '-w', dir, '-f', join(inputs, 'promises.cf')], {
    encoding: 'utf8',
    timeout: options.timeoutMs ?? 60_000,
    env: { ...process.env, LC_ALL: 'C.UTF-8' },
  });
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}`;
  return {
    dir,
    status: result.status,
    output,
    reports: output
      .split('\n')
      .filter((line) => line.startsWith('R: '))
      .map((line) => line.slice(3)),
    rejected,
    commandOutput: output
      .split('\n')
      .map((line) => /\bQ: ".*?": (.*)$/.exec(line)?.[1])
      .filter((line): line is string => line !== undefined),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
