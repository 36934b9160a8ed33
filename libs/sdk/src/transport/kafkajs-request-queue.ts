/**
 * kafkajs 2.2.4, its last release, keeps a timer firing every millisecond on each broker connection
 * once the connection has had an answer: `RequestQueue.scheduleCheckPendingRequests` re-arms a
 * timeout with a negative delay whether or not any request waits (tulios/kafkajs#1556 and #1704;
 * the fix proposed in #1667 was never released). Every Policygen service burnt 30–40 ms of CPU a
 * second on it, busy or idle. Here the check is armed only while requests wait: a new request and
 * every answer check the queue anyway, and a throttled queue is checked when its throttle ends.
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

interface RequestQueueClass {
  prototype: { scheduleCheckPendingRequests: (this: RequestQueueState) => void };
}

/** kafkajs's `RequestQueue`, the class every broker connection of this process uses. */
export function kafkajsRequestQueue(): RequestQueueClass {
  // A module of kafkajs's own, not of its typed API: the same instance its connections load.
  return require('kafkajs/src/network/requestQueue') as RequestQueueClass;
}

/**
 * Replaces kafkajs's pending-request check with the one above (once; again is a no-op). A kafkajs
 * laid out otherwise than 2.2.4 is left as it is: this is a saving, never a reason to fail.
 */
export function quietKafkajsRequestQueues(): boolean {
  let prototype: RequestQueueClass['prototype'] | undefined;
  try {
    prototype = kafkajsRequestQueue().prototype;
  } catch {
    return false;
  }
  if (typeof prototype?.scheduleCheckPendingRequests !== 'function') return false;
  prototype.scheduleCheckPendingRequests = scheduleCheckPendingRequests;
  return true;
}
