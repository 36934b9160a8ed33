import type { ValidationIssue } from '@policygen/engine';

/** Exit statuses of every command (outputs.md). */
export const EXIT_OK = 0;
/** At least one node failed, or something unexpected happened. */
export const EXIT_FAILED = 1;
/** The input is invalid: arguments, an unreadable or invalid fleet file, an unknown node. */
export const EXIT_INVALID = 2;

/** A problem with what the user gave us: reported as one line, exit status 2. */
export class InputError extends Error {
  override readonly name = 'InputError';
}

/** A fleet that does not validate: every issue is reported, one per line, exit status 2. */
export class FleetValidationError extends Error {
  override readonly name = 'FleetValidationError';

  constructor(
    readonly source: string,
    readonly issues: readonly ValidationIssue[],
    what = 'fleet',
  ) {
    super(`${source} is not a valid ${what} (${issues.length} ${issues.length === 1 ? 'issue' : 'issues'})`);
  }
}

/** The message of anything thrown, without its stack. */
export function messageOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const message = error.message || error.name;
  // `fetch failed` alone says nothing: its cause says what (a refused or dropped connection).
  return error.cause instanceof Error ? `${message}: ${messageOf(error.cause)}` : message;
}

/** A file system error in a few words (`no such file or directory`), without the path or syscall. */
export function describeFsError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  switch (code) {
    case 'ENOENT':
      return 'no such file or directory';
    case 'EISDIR':
      return 'is a directory';
    case 'ENOTDIR':
      return 'not a directory';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    default:
      return messageOf(error);
  }
}
