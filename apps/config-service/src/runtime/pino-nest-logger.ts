import type { LoggerService } from '@nestjs/common';
import type { Logger } from 'pino';

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

/** Nest's logger interface over pino: JSON lines, with Nest's context as a field. */
export class PinoNestLogger implements LoggerService {
  constructor(private readonly logger: Logger) {}

  log(message: unknown, ...params: unknown[]): void {
    this.write('info', message, params);
  }
  error(message: unknown, ...params: unknown[]): void {
    this.write('error', message, params);
  }
  warn(message: unknown, ...params: unknown[]): void {
    this.write('warn', message, params);
  }
  debug(message: unknown, ...params: unknown[]): void {
    this.write('debug', message, params);
  }
  verbose(message: unknown, ...params: unknown[]): void {
    this.write('trace', message, params);
  }
  fatal(message: unknown, ...params: unknown[]): void {
    this.write('fatal', message, params);
  }

  /** Nest passes `(message, ...details, context)`; for errors the first detail is the stack. */
  private write(level: Level, message: unknown, params: readonly unknown[]): void {
    const last = params[params.length - 1];
    const context = typeof last === 'string' ? last : undefined;
    const details = context === undefined ? params : params.slice(0, -1);
    const stack = level === 'error' && typeof details[0] === 'string' ? details[0] : undefined;
    const fields: Record<string, unknown> = {};
    if (context !== undefined) fields['context'] = context;
    if (stack !== undefined) fields['stack'] = stack;
    if (message instanceof Error) this.logger[level]({ ...fields, err: message }, message.message);
    else if (typeof message === 'object' && message !== null) this.logger[level]({ ...fields, ...message });
    else this.logger[level](fields, String(message));
  }
}
