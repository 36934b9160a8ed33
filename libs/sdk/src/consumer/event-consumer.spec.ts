import fc from 'fast-check';
import type { GenerationEvent } from '../contract/schemas';
import { TOPICS, topicsFor } from '../contract/topics';
import type {
  BatchControl,
  EventTransport,
  RawBatch,
  RawMessage,
  TransportSubscription,
} from '../transport/event-transport';
import type { SdkLogger } from './logger';
import { EventConsumer } from './event-consumer';

const quiet: SdkLogger = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** The consumer's side of a transport: batches handed over as a test says, positions as reported. */
class ScriptedTransport implements EventTransport {
  readonly description = 'scripted';
  readonly deadLetters: { message: RawMessage; reason: string }[] = [];
  readonly handledUpTo = new Map<string, string>();
  subscription: TransportSubscription | null = null;
  private onBatch: ((batch: RawBatch, control: BatchControl) => Promise<void>) | null = null;
  private running = true;
  private readonly inFlight = new Set<Promise<void>>();
  failDeadLetters = false;

  async start(
    subscription: TransportSubscription,
    onBatch: (batch: RawBatch, control: BatchControl) => Promise<void>,
  ): Promise<void> {
    this.subscription = subscription;
    this.onBatch = onBatch;
  }

  deliver(batch: RawBatch): Promise<void> {
    if (!this.onBatch) throw new Error('not started');
    const delivery = this.onBatch(batch, {
      handledUpTo: (offset) => this.handledUpTo.set(`${batch.topic}/${batch.partition}`, offset),
      isRunning: () => this.running,
    });
    this.inFlight.add(delivery);
    void delivery.finally(() => this.inFlight.delete(delivery)).catch(() => undefined);
    return delivery;
  }

  async deadLetter(message: RawMessage, reason: string): Promise<void> {
    if (this.failDeadLetters) throw new Error('the broker is away');
    this.deadLetters.push({ message, reason });
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.allSettled([...this.inFlight]);
  }
}

function result(nodeId: string, revision: number): GenerationEvent {
  return {
    schemaVersion: 1,
    type: 'generation.result',
    nodeId,
    revision,
    outcome: 'generated',
    hash: `sha256:${'ab'.repeat(32)}`,
    errors: [],
    durationMs: 1,
  };
}

function messagesOf(
  topic: string,
  values: readonly (string | null)[],
  keys?: readonly string[],
): RawMessage[] {
  return values.map((value, index) => ({
    topic,
    partition: 0,
    offset: String(100 + index),
    key: keys?.[index] ?? 'n1',
    value,
    headers: { origin: 'test' },
    timestamp: 0,
  }));
}

const RESULTS = TOPICS.generationEvents;

function consumerOf(transport: ScriptedTransport, options: { concurrency?: number; attempts?: number } = {}) {
  return new EventConsumer({
    transport,
    groupId: 'g',
    logger: quiet,
    concurrency: options.concurrency ?? 4,
    retry: { attempts: options.attempts ?? 3, initialDelayMs: 1, maxDelayMs: 2, jitter: 0 },
  });
}

describe('EventConsumer', () => {
  it('hands typed, validated events to the handler and reports the batch handled', async () => {
    const transport = new ScriptedTransport();
    const seen: GenerationEvent[] = [];
    const consumer = consumerOf(transport).subscribe(RESULTS, (event) => void seen.push(event));
    await consumer.start();
    await transport.deliver({
      topic: RESULTS,
      partition: 0,
      messages: messagesOf(RESULTS, [JSON.stringify(result('n1', 1)), JSON.stringify(result('n1', 2))]),
    });
    expect(seen.map((event) => event.revision)).toEqual([1, 2]);
    expect(transport.handledUpTo.get(`${RESULTS}/0`)).toBe('101');
    expect(consumer.stats()).toMatchObject({ handled: 2, retried: 0, deadLettered: 0 });
  });

  it('sends a message that is not a valid event to the DLQ with the path of each issue, and goes on', async () => {
    const transport = new ScriptedTransport();
    const seen: number[] = [];
    const consumer = consumerOf(transport).subscribe(RESULTS, (event) => void seen.push(event.revision));
    await consumer.start();
    await transport.deliver({
      topic: RESULTS,
      partition: 0,
      messages: messagesOf(RESULTS, [
        'not json',
        JSON.stringify({ ...result('n1', 1), outcome: 'maybe' }),
        null,
        JSON.stringify(result('n1', 3)),
      ]),
    });
    expect(seen).toEqual([3]);
    expect(transport.deadLetters.map(({ reason }) => reason)).toEqual([
      expect.stringMatching(/^\$: not JSON/),
      expect.stringMatching(/^\$\.outcome: /),
      '$: a tombstone (no value) on a topic of events',
    ]);
    expect(transport.handledUpTo.get(`${RESULTS}/0`)).toBe('103');
  });

  it('tries a failing handler as often as the budget says, then dead-letters it with the last error', async () => {
    const transport = new ScriptedTransport();
    const tries: number[] = [];
    const consumer = consumerOf(transport, { attempts: 3 }).subscribe(RESULTS, (event, context) => {
      tries.push(context.attempt);
      if (event.revision === 1) throw new Error('downstream is away');
    });
    await consumer.start();
    await transport.deliver({
      topic: RESULTS,
      partition: 0,
      messages: messagesOf(RESULTS, [JSON.stringify(result('n1', 1)), JSON.stringify(result('n1', 2))]),
    });
    expect(tries).toEqual([1, 2, 3, 1]);
    expect(transport.deadLetters).toEqual([
      {
        message: expect.objectContaining({ offset: '100', headers: { origin: 'test' } }),
        reason: 'the handler failed 3 time(s); last: downstream is away',
      },
    ]);
    expect(consumer.stats()).toMatchObject({ handled: 1, retried: 2, deadLettered: 1 });
  });

  it('with an unbounded budget, keeps trying a failing handler until it succeeds: nothing is dead-lettered', async () => {
    const transport = new ScriptedTransport();
    let failures = 0;
    const consumer = new EventConsumer({
      transport,
      groupId: 'g',
      logger: quiet,
      retry: { attempts: Infinity, initialDelayMs: 1, maxDelayMs: 2, jitter: 0 },
    }).subscribe(RESULTS, () => {
      if (++failures < 12) throw new Error('the database is away');
    });
    await consumer.start();
    await transport.deliver({
      topic: RESULTS,
      partition: 0,
      messages: messagesOf(RESULTS, [JSON.stringify(result('n1', 1))]),
    });
    expect(consumer.stats()).toMatchObject({ handled: 1, retried: 11, deadLettered: 0 });
    expect(transport.deadLetters).toEqual([]);
  });

  it('rejects a caughtUp that can no longer come once stopped', async () => {
    const transport = new ScriptedTransport();
    const consumer = consumerOf(transport).subscribe(RESULTS, () => undefined);
    await consumer.start();
    const waiting = consumer.caughtUp(RESULTS);
    await consumer.stop();
    await expect(waiting).rejects.toThrow('stopped before it caught up');
  });

  it('fails the batch when a dead letter cannot be sent: the message comes again, it is never dropped', async () => {
    const transport = new ScriptedTransport();
    transport.failDeadLetters = true;
    const consumer = consumerOf(transport).subscribe(RESULTS, () => undefined);
    await consumer.start();
    await expect(
      transport.deliver({ topic: RESULTS, partition: 0, messages: messagesOf(RESULTS, ['{']) }),
    ).rejects.toThrow('the broker is away');
    expect(transport.handledUpTo.has(`${RESULTS}/0`)).toBe(false);
  });

  it('keeps each key in order and runs no more handlers at once than its concurrency', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom('a', 'b', 'c', 'd', 'e'), { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 1, max: 4 }),
        async (keys, concurrency) => {
          const transport = new ScriptedTransport();
          let running = 0;
          let peak = 0;
          const order = new Map<string, number[]>();
          const consumer = consumerOf(transport, { concurrency }).subscribe(RESULTS, async (event) => {
            running += 1;
            peak = Math.max(peak, running);
            await new Promise((resolve) => setTimeout(resolve, (event.revision * 7) % 3));
            order.set(event.nodeId, [...(order.get(event.nodeId) ?? []), event.revision]);
            running -= 1;
          });
          await consumer.start();
          const values = keys.map((key, index) => JSON.stringify(result(key, index)));
          await transport.deliver({
            topic: RESULTS,
            partition: 0,
            messages: messagesOf(RESULTS, values, keys),
          });
          expect(peak).toBeLessThanOrEqual(concurrency);
          for (const revisions of order.values())
            expect(revisions).toEqual([...revisions].sort((x, y) => x - y));
          expect([...order.values()].flat()).toHaveLength(keys.length);
          expect(transport.handledUpTo.get(`${RESULTS}/0`)).toBe(String(100 + keys.length - 1));
        },
      ),
      { numRuns: 40 },
    );
  });

  it('on stop, finishes what runs, gives up a waiting retry, and reports only the unbroken handled run', async () => {
    const transport = new ScriptedTransport();
    let release: () => void = () => undefined;
    const slow = new Promise<void>((resolve) => (release = resolve));
    const consumer = new EventConsumer({
      transport,
      groupId: 'g',
      logger: quiet,
      concurrency: 4,
      retry: { attempts: 5, initialDelayMs: 60_000, maxDelayMs: 60_000, jitter: 0 },
    }).subscribe(RESULTS, async (event) => {
      if (event.nodeId === 'slow') await slow;
      if (event.nodeId === 'failing') throw new Error('no');
    });
    await consumer.start();
    const delivery = transport.deliver({
      topic: RESULTS,
      partition: 0,
      messages: messagesOf(
        RESULTS,
        [result('fast', 1), result('slow', 2), result('failing', 3), result('slow', 4)].map((event) =>
          JSON.stringify(event),
        ),
        ['fast', 'slow', 'failing', 'slow'],
      ),
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const stopped = consumer.stop();
    release();
    await stopped;
    await delivery;
    // 100 and 101 were handled; 102 waited for a retry and was given up, so nothing past it counts.
    expect(transport.handledUpTo.get(`${RESULTS}/0`)).toBe('101');
    expect(consumer.stats()).toMatchObject({ handled: 2, deadLettered: 0 });
  });

  it('reads the topics of a namespace and tells each handler the canonical topic', async () => {
    const transport = new ScriptedTransport();
    const topics = topicsFor('staging');
    const seen: string[] = [];
    const consumer = new EventConsumer({
      transport,
      groupId: 'g',
      namespace: 'staging',
      logger: quiet,
    }).subscribe(RESULTS, (_event, context) => void seen.push(context.topic));
    await consumer.start();
    expect(transport.subscription?.topics).toEqual([topics.generationEvents]);
    await transport.deliver({
      topic: topics.generationEvents,
      partition: 0,
      messages: messagesOf(topics.generationEvents, [JSON.stringify(result('n1', 1))]),
    });
    expect(seen).toEqual([RESULTS]);
  });

  it('gives the latest-bundles topic its tombstones as null, with the node in the key', async () => {
    const transport = new ScriptedTransport();
    const seen: [string | null, unknown][] = [];
    const consumer = consumerOf(transport).subscribe(TOPICS.latestBundles, (bundle, context) => {
      seen.push([context.key, bundle]);
    });
    await consumer.start();
    await transport.deliver({
      topic: TOPICS.latestBundles,
      partition: 0,
      messages: messagesOf(TOPICS.latestBundles, [null], ['gone-node']),
    });
    expect(seen).toEqual([['gone-node', null]]);
  });

  it('resolves caughtUp when the transport says so', async () => {
    const transport = new ScriptedTransport();
    const consumer = consumerOf(transport).subscribe(RESULTS, () => undefined);
    await consumer.start();
    let caughtUp = false;
    void consumer.caughtUp(RESULTS).then(() => (caughtUp = true));
    await Promise.resolve();
    expect(caughtUp).toBe(false);
    transport.subscription?.onCaughtUp(RESULTS);
    await new Promise((resolve) => setImmediate(resolve));
    expect(caughtUp).toBe(true);
  });

  it('refuses what cannot work, saying what', () => {
    const transport = new ScriptedTransport();
    expect(() => new EventConsumer({ transport, groupId: '' })).toThrow('groupId');
    expect(() => new EventConsumer({ transport, groupId: 'g', concurrency: 0 })).toThrow('concurrency');
    expect(() => new EventConsumer({ transport, groupId: 'g', retry: { attempts: 0 } })).toThrow(
      'retry.attempts',
    );
    const consumer = new EventConsumer({ transport, groupId: 'g' });
    expect(() => consumer.subscribe('policygen.nothing.v1' as typeof RESULTS, () => undefined)).toThrow(
      'no Policygen topic',
    );
    return expect(consumer.start()).rejects.toThrow('subscribe to at least one topic');
  });
});
