/**
 * kafkajs 2.2.4, its last release, keeps timers waking every process that uses it, busy or idle:
 *
 * - `RequestQueue.scheduleCheckPendingRequests` re-arms a timeout with a negative delay on each
 *   broker connection once it has had an answer, whether or not any request waits
 *   (tulios/kafkajs#1556 and #1704; the fix proposed in #1667 was never released): every Policygen
 *   service burnt 30–40 ms of CPU a second on it. Here the check is armed only while requests
 *   wait: a new request and every answer check the queue anyway, and a throttled queue is checked
 *   when its throttle ends.
 * - `RequestQueue.scheduleRequestTimeoutCheck` gives each connection an interval of its own, every
 *   100 ms, to time out requests unanswered for longer than `requestTimeout`: with the 8–9
 *   connections of a service (admin, producer, consumers, their group coordinators), 46–59 calls
 *   a second of a process that has nothing to do (about ten wake-ups: Node keeps timers of one
 *   duration in phase). Here one sweep of the process looks at every connection's requests, each
 *   at least every tenth of its `requestTimeout` (at most every second): the same requests time
 *   out, as late as that after their timeout instead of 100 ms.
 */

/** What the replacement reads and writes of kafkajs's `RequestQueue` (src/network/requestQueue). */
export interface RequestQueueState {
  readonly pending: readonly unknown[];
  readonly throttledUntil: number;
  throttleCheckTimeoutId: ReturnType<typeof setTimeout> | null;
  checkPendingRequests(): void;
}

/** kafkajs's own delay before a waiting request is looked at again when no throttle says longer. */
const CHECK_PENDING_REQUESTS_INTERVAL_MS = 10;

export function scheduleCheckPendingRequests(this: RequestQueueState): void {
  if (this.throttleCheckTimeoutId !== null || this.pending.length === 0) return;
  const throttled = this.throttledUntil - Date.now();
  this.throttleCheckTimeoutId = setTimeout(
    () => {
      this.throttleCheckTimeoutId = null;
      this.checkPendingRequests();
    },
    throttled > 0 ? throttled : CHECK_PENDING_REQUESTS_INTERVAL_MS,
  );
}

/** What the sweep reads of a request kafkajs has sent and not had answered (its `SocketRequest`). */
export interface InflightRequest {
  readonly sentAt: number;
  readonly requestTimeout: number;
  timeoutRequest(): void;
}

/** What the sweep reads and calls of kafkajs's `RequestQueue`. */
export interface TimedRequestQueue {
  readonly enforceRequestTimeout: boolean;
  readonly requestTimeout: number;
  readonly inflight: ReadonlyMap<unknown, InflightRequest>;
  isConnected(): boolean;
  destroy(): void;
}

/** The longest a request may stay past its timeout before it is timed out: a process wakes this often at least. */
const MAX_SWEEP_INTERVAL_MS = 1_000;

/**
 * Every connection's request-timeout check of the process on one timer, instead of an interval per
 * connection: a request unanswered for longer than its `requestTimeout` is timed out (kafkajs's
 * rule, the same requests), and a connection found disconnected leaves the sweep (kafkajs's
 * `destroy`). The timer runs only while some connection is in the sweep.
 */
export class RequestTimeoutSweep {
  private readonly queues = new Set<TimedRequestQueue>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private intervalMs = MAX_SWEEP_INTERVAL_MS;
  private timedOutRequests = 0;

  /** Connections looked at, and how often (ms): the tightest of theirs. */
  get watching(): { readonly connections: number; readonly intervalMs: number | null } {
    return { connections: this.queues.size, intervalMs: this.timer === undefined ? null : this.intervalMs };
  }

  /** Requests timed out so far: a broker that stopped answering on a connection still open. */
  get timedOut(): number {
    return this.timedOutRequests;
  }

  add(queue: TimedRequestQueue): void {
    this.queues.add(queue);
    const wanted = sweepIntervalOf(queue.requestTimeout);
    if (this.timer !== undefined && wanted >= this.intervalMs) return;
    this.intervalMs = Math.min(wanted, this.timer === undefined ? MAX_SWEEP_INTERVAL_MS : this.intervalMs);
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = setInterval(() => this.sweep(), this.intervalMs);
    // The sockets keep a process alive while it talks to a broker; a check of them need not.
    this.timer.unref();
  }

  remove(queue: TimedRequestQueue): void {
    if (!this.queues.delete(queue) || this.queues.size > 0 || this.timer === undefined) return;
    clearInterval(this.timer);
    this.timer = undefined;
    this.intervalMs = MAX_SWEEP_INTERVAL_MS;
  }

  /** What kafkajs's interval did for one connection, for each of them. */
  sweep(now = Date.now()): void {
    for (const queue of [...this.queues]) {
      for (const request of [...queue.inflight.values()])
        if (now - request.sentAt > request.requestTimeout) {
          this.timedOutRequests++;
          request.timeoutRequest();
        }
      if (!queue.isConnected()) queue.destroy();
    }
  }
}

/** How often a connection's requests are looked at: a tenth of its timeout, 10 ms to a second. */
export function sweepIntervalOf(requestTimeoutMs: number): number {
  return Math.min(MAX_SWEEP_INTERVAL_MS, Math.max(10, Math.floor(requestTimeoutMs / 10)));
}

/** The process's sweep, which the replaced `RequestQueue`s join. */
export const requestTimeoutSweep = new RequestTimeoutSweep();

interface RequestQueuePrototype {
  scheduleCheckPendingRequests: (this: RequestQueueState) => void;
  scheduleRequestTimeoutCheck: (this: TimedRequestQueue) => void;
  destroy: (this: TimedRequestQueue) => void;
}

interface RequestQueueClass {
  prototype: RequestQueuePrototype;
}

/** kafkajs's `RequestQueue`, the class every broker connection of this process uses. */
export function kafkajsRequestQueue(): RequestQueueClass {
  // A module of kafkajs's own, not of its typed API: the same instance its connections load.
  return require('kafkajs/src/network/requestQueue') as RequestQueueClass;
}

/** kafkajs's own methods, kept to be called by the replacements (a replaced prototype is not replaced again). */
const released = new WeakMap<RequestQueuePrototype, { destroy: RequestQueuePrototype['destroy'] }>();

/**
 * Replaces kafkajs's pending-request check and its per-connection request-timeout interval with
 * the ones above (once; again is a no-op). A kafkajs laid out otherwise than 2.2.4 is left as it
 * is: this is a saving, never a reason to fail.
 */
export function quietKafkajsRequestQueues(): boolean {
  let prototype: RequestQueuePrototype | undefined;
  try {
    prototype = kafkajsRequestQueue().prototype;
  } catch {
    return false;
  }
  if (
    typeof prototype?.scheduleCheckPendingRequests !== 'function' ||
    typeof prototype.scheduleRequestTimeoutCheck !== 'function' ||
    typeof prototype.destroy !== 'function'
  )
    return false;
  prototype.scheduleCheckPendingRequests = scheduleCheckPendingRequests;
  if (!released.has(prototype)) {
    const own = { destroy: prototype.destroy };
    released.set(prototype, own);
    prototype.scheduleRequestTimeoutCheck = function scheduleRequestTimeoutCheck(this: TimedRequestQueue) {
      if (!this.enforceRequestTimeout) return;
      this.destroy();
      requestTimeoutSweep.add(this);
    };
    prototype.destroy = function destroy(this: TimedRequestQueue) {
      requestTimeoutSweep.remove(this);
      own.destroy.call(this);
    };
  }
  return true;
}
