import fc from 'fast-check';
import {
  kafkajsRequestQueue,
  quietKafkajsRequestQueues,
  requestTimeoutSweep,
  RequestTimeoutSweep,
  sweepIntervalOf,
} from './kafkajs-request-queue';
import type { TimedRequestQueue } from './kafkajs-request-queue';

/** kafkajs's `RequestQueue` as these tests drive it: requests pushed, sent at once, never answered. */
type Queue = TimedRequestQueue & {
  scheduleRequestTimeoutCheck(): void;
  push(request: {
    entry: Record<string, unknown>;
    expectResponse: boolean;
    sendRequest: () => void;
    requestTimeout?: number;
  }): void;
};

const RequestQueue = kafkajsRequestQueue() as unknown as {
  new (options: Record<string, unknown>): Queue;
  prototype: { scheduleRequestTimeoutCheck(this: Queue): void };
};
// Taken before anything replaces it: kafkajs as released.
const releasedTimeoutCheck = RequestQueue.prototype.scheduleRequestTimeoutCheck;

const silent = (): undefined => undefined;

function newQueue(requestTimeout: number, connected: () => boolean = () => true): Queue {
  return new RequestQueue({
    instrumentationEmitter: null,
    maxInFlightRequests: null,
    requestTimeout,
    enforceRequestTimeout: true,
    clientId: 'test',
    broker: 'localhost:9092',
    logger: { debug: silent, info: silent, warn: silent, error: silent },
    isConnected: connected,
  });
}

let correlation = 0;

/** Sends a request the broker never answers: when it was sent, and each time it was rejected as timed out. */
function unanswered(queue: Queue): { readonly sentAt: number; readonly timedOutAt: number[] } {
  const request = { sentAt: Date.now(), timedOutAt: [] as number[] };
  queue.push({
    entry: {
      correlationId: ++correlation,
      apiName: 'Fetch',
      apiKey: 1,
      apiVersion: 11,
      resolve: () => {
        throw new Error('a request nobody answers was answered');
      },
      reject: (error: Error) => {
        if (error.name !== 'KafkaJSRequestTimeoutError') throw error;
        request.timedOutAt.push(Date.now());
      },
    },
    expectResponse: true,
    sendRequest: silent,
  });
  return request;
}

describe("kafkajs's request-timeout check", () => {
  afterEach(() => jest.useRealTimers());

  it('as released, keeps an interval per connection, whether or not a request waits', () => {
    jest.useFakeTimers();
    const queues = [newQueue(30_000), newQueue(30_000), newQueue(30_000)];
    for (const queue of queues) releasedTimeoutCheck.call(queue);
    expect(jest.getTimerCount()).toBe(3);
    for (const queue of queues) queue.destroy();
  });

  it("replaced, the process's connections share one timer, gone once they are", () => {
    expect(quietKafkajsRequestQueues()).toBe(true);
    expect(quietKafkajsRequestQueues()).toBe(true);
    jest.useFakeTimers();
    const queues = [newQueue(30_000), newQueue(30_000), newQueue(30_000)];
    // As a connection does on connecting; and again, as it does on connecting again.
    for (const queue of queues) queue.scheduleRequestTimeoutCheck();
    for (const queue of queues) queue.scheduleRequestTimeoutCheck();
    expect(jest.getTimerCount()).toBe(1);
    expect(requestTimeoutSweep.watching).toEqual({ connections: 3, intervalMs: 1_000 });
    for (const queue of queues) queue.destroy();
    expect(jest.getTimerCount()).toBe(0);
    expect(requestTimeoutSweep.watching).toEqual({ connections: 0, intervalMs: null });
  });

  it('replaced, times out every unanswered request after its timeout, at most a sweep later, and once', async () => {
    quietKafkajsRequestQueues();
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            requestTimeout: fc.integer({ min: 20, max: 20_000 }),
            sends: fc.array(fc.integer({ min: 0, max: 5_000 }), { minLength: 1, maxLength: 4 }),
          }),
          { minLength: 1, maxLength: 4 },
        ),
        async (connections) => {
          jest.useFakeTimers();
          const start = Date.now();
          const queues = connections.map(({ requestTimeout }) => newQueue(requestTimeout));
          for (const queue of queues) queue.scheduleRequestTimeoutCheck();
          const timedOutBefore = requestTimeoutSweep.timedOut;
          try {
            const sweepMs = Math.min(
              ...connections.map(({ requestTimeout }) => sweepIntervalOf(requestTimeout)),
            );
            const sent: { requestTimeout: number; request: ReturnType<typeof unanswered> }[] = [];
            const sends = connections
              .flatMap(({ requestTimeout, sends: offsets }, index) =>
                offsets.map((offset) => ({ offset, requestTimeout, queue: queues[index] as Queue })),
              )
              .sort((a, b) => a.offset - b.offset);
            for (const send of sends) {
              await jest.advanceTimersByTimeAsync(start + send.offset - Date.now());
              sent.push({ requestTimeout: send.requestTimeout, request: unanswered(send.queue) });
            }
            await jest.advanceTimersByTimeAsync(25_000 + 2 * sweepMs);
            for (const { requestTimeout, request } of sent) {
              expect(request.timedOutAt).toHaveLength(1);
              const after = (request.timedOutAt[0] as number) - request.sentAt;
              expect(after).toBeGreaterThan(requestTimeout);
              expect(after).toBeLessThanOrEqual(requestTimeout + sweepMs);
            }
            for (const queue of queues) expect(queue.inflight.size).toBe(0);
            expect(requestTimeoutSweep.timedOut - timedOutBefore).toBe(sent.length);
          } finally {
            // A failed run leaves nothing behind for the next (the sweep is the process's).
            for (const queue of queues) queue.destroy();
            jest.useRealTimers();
          }
          expect(requestTimeoutSweep.watching.connections).toBe(0);
        },
      ),
      { numRuns: 40 },
    );
  });
});

describe('RequestTimeoutSweep', () => {
  afterEach(() => jest.useRealTimers());

  it('looks at each connection a tenth of its timeout apart, 10 ms to a second', () => {
    expect(sweepIntervalOf(30_000)).toBe(1_000);
    expect(sweepIntervalOf(5_000)).toBe(500);
    expect(sweepIntervalOf(50)).toBe(10);
    jest.useFakeTimers();
    const sweep = new RequestTimeoutSweep();
    const slow = newQueue(30_000);
    const quick = newQueue(2_000);
    sweep.add(slow);
    expect(sweep.watching.intervalMs).toBe(1_000);
    sweep.add(quick);
    expect(sweep.watching).toEqual({ connections: 2, intervalMs: 200 });
    expect(jest.getTimerCount()).toBe(1);
    sweep.remove(quick);
    sweep.remove(slow);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('lets a connection found disconnected go, as kafkajs destroys it', () => {
    jest.useFakeTimers();
    const sweep = new RequestTimeoutSweep();
    let connected = true;
    const queue = newQueue(30_000, () => connected);
    const destroyed = jest.spyOn(queue, 'destroy').mockImplementation(() => sweep.remove(queue));
    sweep.add(queue);
    jest.advanceTimersByTime(3_000);
    expect(destroyed).not.toHaveBeenCalled();
    connected = false;
    jest.advanceTimersByTime(1_000);
    expect(destroyed).toHaveBeenCalledTimes(1);
    expect(sweep.watching).toEqual({ connections: 0, intervalMs: null });
  });
});
