/**
 * Failures of the infrastructure rather than of the work: a store or the bus unreachable,
 * restarting, or out of disk. Retrying later can succeed; the request or the message is not at fault.
 */
const TRANSIENT_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ENOSPC',
]);

/** Postgres SQLSTATE classes: 08 connection exception, 53 insufficient resources, 57P operator intervention. */
const TRANSIENT_SQLSTATE = /^(08|53|57P)/;

const TRANSIENT_MESSAGES = [
  'Connection terminated',
  'connection timeout',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error',
  'The client is closed',
  'Socket closed unexpectedly',
];

export function isTransientFailure(error: unknown): boolean {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 8; depth++) {
    const { code, retriable } = cause as { code?: unknown; retriable?: unknown };
    if (typeof code === 'string' && (TRANSIENT_CODES.has(code) || TRANSIENT_SQLSTATE.test(code))) return true;
    if (retriable === true) return true;
    if (TRANSIENT_MESSAGES.some((text) => cause instanceof Error && cause.message.includes(text)))
      return true;
    if (cause instanceof AggregateError && cause.errors.some((inner) => isTransientFailure(inner)))
      return true;
    cause = cause.cause;
  }
  return false;
}
