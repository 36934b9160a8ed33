import { kafkajsRequestQueue, quietKafkajsRequestQueues } from './kafkajs-request-queue';
import type { RequestQueueState } from './kafkajs-request-queue';

type Queue = RequestQueueState & {
  pending: unknown[];
  throttledUntil: number;
  scheduleCheckPendingRequests(): void;
};

const RequestQueue = kafkajsRequestQueue() as unknown as {
  new (options: Record<string, unknown>): Queue;
  prototype: { scheduleCheckPendingRequests: (this: RequestQueueState) => void };
};
const original = RequestQueue.prototype.scheduleCheckPendingRequests;

function newQueue(): Queue {
  const silent = () => undefined;
  return new RequestQueue({
    instrumentationEmitter: null,
    maxInFlightRequests: null,
    requestTimeout: 30_000,
    enforceRequestTimeout: false,
    clientId: 'test',
    broker: 'localhost:9092',
    logger: { debug: silent, info: silent, warn: silent, error: silent },
  });
}

/** A replaced queue, throttled for `throttleMs`, whose request waits and has asked to be looked at. */
function withWaitingRequest(throttleMs: number) {
  quietKafkajsRequestQueues();
  jest.useFakeTimers();
  const queue = newQueue();
  if (throttleMs > 0) queue.throttledUntil = Date.now() + throttleMs;
  const checks = jest.spyOn(queue, 'checkPendingRequests').mockImplementation(() => undefined);
  queue.pending.push({ waiting: true });
  queue.scheduleCheckPendingRequests();
  return { queue, checks };
}

describe("kafkajs's pending-request check", () => {
  afterEach(() => {
    jest.useRealTimers();
    RequestQueue.prototype.scheduleCheckPendingRequests = original;
  });

  it('as released, re-arms a timer after every answer though nothing waits (the loop this replaces)', () => {
    jest.useFakeTimers();
    const queue = newQueue();
    const checks = jest.spyOn(queue, 'checkPendingRequests');
    queue.checkPendingRequests();
    jest.advanceTimersByTime(100);
    expect(checks.mock.calls.length).toBeGreaterThan(50);
  });

  it('replaced, arms no timer while nothing waits, however many answers come', () => {
    expect(quietKafkajsRequestQueues()).toBe(true);
    expect(quietKafkajsRequestQueues()).toBe(true);
    jest.useFakeTimers();
    const queue = newQueue();
    const checks = jest.spyOn(queue, 'checkPendingRequests');
    for (let answer = 0; answer < 5; answer++) queue.checkPendingRequests();
    jest.advanceTimersByTime(1_000);
    expect(checks).toHaveBeenCalledTimes(5);
    expect(queue.throttleCheckTimeoutId).toBeNull();
  });

  it('replaced, still looks at a waiting request when the throttle ends, and once', () => {
    const { queue, checks } = withWaitingRequest(250);
    queue.scheduleCheckPendingRequests();
    jest.advanceTimersByTime(249);
    expect(checks).not.toHaveBeenCalled();
    jest.advanceTimersByTime(1);
    expect(checks).toHaveBeenCalledTimes(1);
    expect(queue.throttleCheckTimeoutId).toBeNull();
  });

  it("replaced, looks at a request waiting for a free slot within kafkajs's own 10 ms", () => {
    const { checks } = withWaitingRequest(0);
    jest.advanceTimersByTime(10);
    expect(checks).toHaveBeenCalledTimes(1);
  });
});
