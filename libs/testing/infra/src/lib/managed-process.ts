import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { orAfter } from './net';

/**
 * Runs a command under a small bash guard in its own process group. The guard stops the command
 * when asked (SIGTERM), and also when the process that started it disappears, so a test run that
 * is killed never leaves a broker or a database behind. It wakes once a second to look for that
 * process (four times a second once stopping, to kill after 10 s), and at once when the command
 * exits or a signal comes: a guard costs a fork a second, not one every 250 ms.
 */
const GUARD = `
watched=$1; shift
"$@" &
child=$!
stopping=0
trap 'stopping=1' TERM INT HUP
ticks=0
status=
while [ -z "$status" ]; do
  if [ "$stopping" = 0 ] && ! kill -0 "$watched" 2>/dev/null; then stopping=1; fi
  pause=1
  if [ "$stopping" = 1 ]; then
    [ "$ticks" = 0 ] && kill -TERM "$child" 2>/dev/null
    ticks=$((ticks + 1))
    [ "$ticks" -gt 40 ] && kill -KILL "$child" 2>/dev/null
    pause=0.25
  fi
  sleep "$pause" &
  nap=$!
  finished=
  wait -n -p finished "$child" "$nap" 2>/dev/null
  code=$?
  if [ "$finished" = "$child" ]; then status=$code; kill "$nap" 2>/dev/null
  elif ! kill -0 "$child" 2>/dev/null; then
    # A command that ended before \`wait -n\` looked (reaped already) is no job of it any more: its saved status.
    wait "$child"; status=$?; kill "$nap" 2>/dev/null
  fi
done
exit "$status"
`;

export interface ProcessExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface ManagedProcessOptions {
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly logFile: string;
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
}

export class ManagedProcess {
  readonly exited: Promise<ProcessExit>;
  private exit: ProcessExit | undefined;
  private readonly pid: number;

  private constructor(
    readonly name: string,
    readonly logFile: string,
    options: ManagedProcessOptions,
  ) {
    const log = openSync(logFile, 'a');
    try {
      const child = spawn(
        'bash',
        ['-c', GUARD, 'guard', String(process.pid), options.command, ...options.args],
        {
          cwd: options.cwd,
          env: options.env ?? process.env,
          detached: true,
          stdio: ['ignore', log, log],
        },
      );
      if (child.pid === undefined) throw new Error(`${options.name}: could not spawn bash`);
      this.pid = child.pid;
      // Unreferenced: a test run whose teardown never comes must still be able to exit.
      child.unref();
      this.exited = new Promise((resolve) => {
        child.once('exit', (code, signal) => {
          this.exit = { code, signal };
          resolve(this.exit);
        });
      });
    } finally {
      closeSync(log);
    }
  }

  static start(options: ManagedProcessOptions): ManagedProcess {
    return new ManagedProcess(options.name, options.logFile, options);
  }

  /** The guard's pid, which is also the process group of everything the command runs. */
  get processGroup(): number {
    return this.pid;
  }

  get running(): boolean {
    return this.exit === undefined;
  }

  /** Kills the command at once, as a crash would. */
  kill(): void {
    this.signalGroup('SIGKILL');
  }

  /** Asks the command to stop; kills its whole process group if it is still there after timeoutMs. */
  async stop(timeoutMs = 15_000): Promise<void> {
    if (!this.running) return;
    this.signalGuard('SIGTERM');
    const stopped = await orAfter(
      this.exited.then(() => true),
      timeoutMs,
      false,
    );
    if (!stopped) {
      this.signalGroup('SIGKILL');
      await this.exited;
    }
  }

  /** The last lines the command wrote, for error messages. */
  logTail(lines = 40): string {
    try {
      return readFileSync(this.logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
    } catch {
      return '(no log)';
    }
  }

  describeExit(): string {
    if (!this.exit) return 'is still running';
    return this.exit.signal ? `was killed by ${this.exit.signal}` : `exited with code ${this.exit.code}`;
  }

  private signalGuard(signal: NodeJS.Signals): void {
    try {
      process.kill(this.pid, signal);
    } catch {
      // already gone
    }
  }

  private signalGroup(signal: NodeJS.Signals): void {
    try {
      process.kill(-this.pid, signal);
    } catch {
      // already gone
    }
  }
}
