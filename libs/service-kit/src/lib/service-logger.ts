import pino from 'pino';
import type { Logger } from 'pino';

/** A service's JSON logger: one line per event on stdout, `service` on every line. */
export function createServiceLogger(service: string, level = 'info'): Logger {
  return pino({ base: { service }, level });
}
