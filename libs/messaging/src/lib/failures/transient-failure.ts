/**
 * Which failures are the infrastructure's rather than the message's: a store, a broker or a disk
 * that is away or full fails every message alike, so retrying the message later is right and
 * dead-lettering it is wrong (a Redis restart must not send thousands of messages to a DLQ).
 */

/** Thrown by a handler that knows its failure is passing: the message waits, its budget unspent. */
export class TransientFailure extends Error {
  readonly transient = true;

  constructor(message: string, options?: { readonly cause?: unknown }) {
    super(message, options);
    this.name = 'TransientFailure';
  }
}

/** Node's system errors of a peer away, a network down, or a disk full or failing. */
const TRANSIENT_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
  'ENOTFOUND',
  'ENOSPC',
  'EDQUOT',
  'EROFS',
  'EIO',
  'EMFILE',
  'ENFILE',
  'EBUSY',
  'EAGAIN',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

/**
 * Postgres SQLSTATE classes and codes that say the server, not the statement, is the problem:
 * connection exceptions (08), insufficient resources such as a full disk (53), operator
 * intervention such as a shutdown (57P), and conflicts a retry resolves (40001, 40P01).
 */
const TRANSIENT_SQLSTATE = /^(08[0-9A-Z]{3}|53[0-9A-Z]{3}|57P0[1-5]|40001|40P01)$/;

/** node-redis's errors of a connection lost or not (yet) made; it names them by class only. */
const TRANSIENT_CLASSES = new Set([
  'ConnectionTimeoutError',
  'SocketTimeoutError',
  'ClientClosedError',
  'ClientOfflineError',
  'DisconnectsClientError',
  'SocketClosedUnexpectedlyError',
  'RootNodesUnavailableError',
  'ReconnectStrategyError',
  'SocketTimeoutDuringMaintenanceError',
  'CommandTimeoutDuringMaintenanceError',
]);

/** Error names of a timeout or of a connection lost, whatever the library (fetch, kafkajs, undici). */
const TRANSIENT_NAMES = new Set([
  'TimeoutError',
  'ConnectionTimeoutError',
  'KafkaJSConnectionError',
  'KafkaJSConnectionClosedError',
  'KafkaJSRequestTimeoutError',
  'KafkaJSBrokerNotFound',
  'KafkaJSNumberOfRetriesExceeded',
  'KafkaJSLockTimeout',
  'KafkaJSStaleTopicMetadataAssignment',
]);

/** Redis replies of a server loading, busy, failing over, out of memory or unable to persist. */
const TRANSIENT_REDIS_REPLY =
  /^(LOADING|BUSY|TRYAGAIN|CLUSTERDOWN|MASTERDOWN|READONLY|NOREPLICAS|OOM|MISCONF)\b/;

/**
 * pg's own errors of a connection lost or never made carry no code: a server that went away
 * mid-query, or a pool that could not connect in time.
 */
const TRANSIENT_PG_MESSAGES = /^(Connection terminated|timeout exceeded when trying to connect)/;

/** HTTP answers of a server overloaded, restarting or behind a gateway that lost it. */
function transientStatus(status: unknown): boolean {
  return (
    typeof status === 'number' && (status === 408 || status === 429 || (status >= 500 && status !== 501))
  );
}

interface ErrorLike {
  readonly name?: unknown;
  readonly code?: unknown;
  readonly errno?: unknown;
  readonly message?: unknown;
  readonly transient?: unknown;
  readonly retriable?: unknown;
  readonly status?: unknown;
  readonly statusCode?: unknown;
  readonly cause?: unknown;
  readonly errors?: unknown;
}

function transientItself(error: ErrorLike): boolean {
  if (error.transient === true) return true;
  if (
    typeof error.code === 'string' &&
    (TRANSIENT_CODES.has(error.code) || TRANSIENT_SQLSTATE.test(error.code))
  )
    return true;
  if (typeof error.name === 'string' && TRANSIENT_NAMES.has(error.name)) return true;
  if (typeof error.message === 'string' && TRANSIENT_PG_MESSAGES.test(error.message)) return true;
  const className = (error as { constructor?: { name?: unknown } }).constructor?.name;
  if (typeof className === 'string' && TRANSIENT_CLASSES.has(className)) return true;
  if (className === 'ErrorReply' || className === 'SimpleError')
    return typeof error.message === 'string' && TRANSIENT_REDIS_REPLY.test(error.message);
  // kafkajs marks what a later try may change; a refusal (`retriable: false`) stays a failure.
  if (typeof error.name === 'string' && error.name.startsWith('KafkaJS') && error.retriable === true)
    return true;
  return transientStatus(error.status) || transientStatus(error.statusCode);
}

/**
 * True when the error, or anything it wraps (`cause`, an `AggregateError`'s `errors`), is a
 * failure of the infrastructure: a `TransientFailure`, a connection refused, reset or timed out,
 * a full disk, Postgres or Redis away or restarting, kafkajs's retriable errors, an HTTP 408, 429
 * or 5xx. Anything else (a bug, a message nobody can handle) is the message's failure.
 */
export function isTransientFailure(error: unknown): boolean {
  const seen = new Set<unknown>();
  const pending: unknown[] = [error];
  while (pending.length > 0 && seen.size < 32) {
    const current = pending.shift();
    if (current === null || typeof current !== 'object' || seen.has(current)) continue;
    seen.add(current);
    const candidate = current as ErrorLike;
    if (candidate.retriable === false && candidate.transient !== true) return false;
    if (transientItself(candidate)) return true;
    pending.push(candidate.cause);
    if (Array.isArray(candidate.errors)) pending.push(...(candidate.errors as unknown[]));
  }
  return false;
}

/** One line for a log, a header or a readiness reason: the error's message and what caused it. */
export function failureText(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current !== undefined && current !== null; depth++) {
    const described =
      current instanceof Error
        ? `${current.message}${typeof (current as ErrorLike).code === 'string' ? ` (${String((current as ErrorLike).code)})` : ''}`
        : String(current);
    if (described && !parts.includes(described)) parts.push(described);
    current = current instanceof Error ? current.cause : undefined;
  }
  return parts.join(': ') || 'unknown error';
}
