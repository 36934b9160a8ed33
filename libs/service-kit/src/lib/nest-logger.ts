import type { LoggerService } from '@nestjs/common';
import type { Logger } from 'pino';

type Level = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';

/**
 * Nest's own logs (and those of `new Logger(context)` in a service) as lines of the service's pino
 * logger: the context as `context`, an object message's fields on the line, an error as `err`.
 * Each application writes to its own logger: nestjs-pino's `Logger` writes, outside a request's
 * AsyncLocalStorage, to the logger of the first application the process created.
 */
export class NestPinoLogger implements LoggerService {
  constructor(private readonly logger: Logger) {}

  verbose(message: unknown, ...optional: unknown[]): void {
    this.write('trace', message, optional);
  }

  debug(message: unknown, ...optional: unknown[]): void {
    this.write('debug', message, optional);
  }

  log(message: unknown, ...optional: unknown[]): void {
    this.write('info', message, optional);
  }

  warn(message: unknown, ...optional: unknown[]): void {
    this.write('warn', message, optional);
  }

  error(message: unknown, ...optional: unknown[]): void {
    this.write('error', message, optional);
  }

  fatal(message: unknown, ...optional: unknown[]): void {
    this.write('fatal', message, optional);
  }

  private write(level: Level, message: unknown, optional: readonly unknown[]): void {
    // Nest passes the context last; what comes between is the message's arguments.
    const fields: Record<string, unknown> = {};
    let rest = optional;
    if (optional.length > 0) {
      fields['context'] = optional[optional.length - 1];
      rest = optional.slice(0, -1);
    }
    if (message instanceof Error) {
      this.logger[level]({ ...fields, err: message }, ...(rest as []));
    } else if (typeof message === 'object' && message !== null) {
      this.logger[level]({ ...fields, ...message }, ...(rest as []));
    } else if (level === 'error' && isStack(rest)) {
      // Nest's exception handlers call error(message, stack, context).
      const err = new Error(String(message));
      err.stack = rest[0];
      this.logger.error({ ...fields, err });
    } else {
      this.logger[level](fields, String(message), ...(rest as []));
    }
  }
}

function isStack(values: readonly unknown[]): values is readonly [string] {
  return values.length === 1 && typeof values[0] === 'string' && /\n\s*at /.test(values[0]);
}
