/** Where a command writes: results to `stdout`, progress and logs to `stderr`. */
export interface Streams {
  readonly stdout: NodeJS.WriteStream;
  readonly stderr: NodeJS.WriteStream;
  readonly env: NodeJS.ProcessEnv;
}

export function processStreams(): Streams {
  return { stdout: process.stdout, stderr: process.stderr, env: process.env };
}

/** Writes text, adding the final newline when it lacks one. */
export function writeLine(stream: NodeJS.WritableStream, text: string): void {
  stream.write(text.endsWith('\n') ? text : `${text}\n`);
}

/** A progress display is for a person at a terminal only. */
export function isInteractive(streams: Streams): boolean {
  return streams.stderr.isTTY === true && streams.env['TERM'] !== 'dumb';
}

/** `NO_COLOR` (https://no-color.org): set and not empty means no ANSI styling. */
export function noColor(streams: Streams): boolean {
  const value = streams.env['NO_COLOR'];
  return value !== undefined && value !== '';
}

/** `1.42 s`, `0.08 s`. */
export function formatSeconds(milliseconds: number): string {
  return `${(milliseconds / 1000).toFixed(2)} s`;
}

/** `a line\n  continued` — a multi-line message kept readable in a list. */
export function indentContinuation(text: string, indent = '  '): string {
  return text.replace(/\r?\n/g, `\n${indent}`);
}
