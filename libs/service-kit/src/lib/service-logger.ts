import pino from 'pino';
import type { Logger } from 'pino';

/**
 * A service's JSON logger: one line per event on stdout, `service` on every line. Lines are
 * written without blocking the event loop: under load, those logged while a write is under way go
 * out together in the next one, not one system call each. What is still buffered is written
 * synchronously when the process exits.
 */
export function createServiceLogger(service: string, level = 'info'): Logger {
  return pino({ base: { service }, level }, pino.destination({ dest: 1, sync: false }));
}
