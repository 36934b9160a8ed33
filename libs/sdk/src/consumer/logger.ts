/** The logging the SDK does: a pino logger fits, as does anything with these three methods. */
export interface SdkLogger {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
}

/** Warnings and errors as JSON lines on stderr; information is left out. */
export const stderrLogger: SdkLogger = {
  info: () => undefined,
  warn: (fields, message) => writeLine('warn', fields, message),
  error: (fields, message) => writeLine('error', fields, message),
};

function writeLine(level: string, fields: Record<string, unknown>, message: string): void {
  process.stderr.write(
    `${JSON.stringify({ level, time: new Date().toISOString(), source: 'policygen-sdk', ...fields, msg: message })}\n`,
  );
}
