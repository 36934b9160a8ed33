import type { EventSourceMessage } from 'eventsource-parser';
import { createParser } from 'eventsource-parser';
import { z } from 'zod';
import type {
  BatchControl,
  DeadLetterDetails,
  EventTransport,
  RawBatch,
  RawMessage,
  TransportSubscription,
} from './event-transport';
import type { PositionStore } from './position-store';
import { MemoryPositionStore } from './position-store';
import type { StreamCursor } from './stream-cursor';
import { formatStreamCursor, parseStreamCursor } from './stream-cursor';

export interface EventStreamConnection {
  /** The address of `policygen start` (e.g. `http://127.0.0.1:8080`). */
  readonly url: string;
  /** Sent as `Authorization: Bearer <token>`. */
  readonly token?: string;
  /** Where positions are kept between runs (default: in memory). */
  readonly positions?: PositionStore;
  /** The first wait before reconnecting after the stream broke (default 500 ms; it doubles, up to 10 s). */
  readonly reconnectDelayMs?: number;
  /** Messages read ahead of the handlers, at most, before reading pauses (default 1,000). */
  readonly readAhead?: number;
}

const streamedMessage = z.object({
  topic: z.string(),
  partition: z.number().int().nonnegative(),
  offset: z.string().regex(/^\d+$/),
  key: z.string().nullable(),
  value: z.string().nullable(),
  headers: z.record(z.string(), z.string()),
  timestamp: z.number(),
});

type Queued = { readonly kind: 'message'; readonly message: RawMessage } | { readonly kind: 'caught-up' };

/**
 * Events from the event stream of `policygen start` (`GET /events/<topic>`, server-sent events):
 * one stream per topic, resumed from the handled position after a break. There are no consumer
 * groups on the server: every consumer gets every event, and the group id only names positions.
 */
export class EventStreamTransport implements EventTransport {
  readonly description: string;
  private readonly positions: PositionStore;
  private readonly abort = new AbortController();
  private readonly followers: Promise<void>[] = [];
  private stopping = false;

  constructor(private readonly connection: EventStreamConnection) {
    let url: URL;
    try {
      url = new URL(connection.url);
    } catch {
      throw new Error(`url: not an http(s) address: "${connection.url}"`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new Error(`url: not an http(s) address: "${connection.url}"`);
    this.description = `${connection.url.replace(/\/$/, '')}/events`;
    this.positions = connection.positions ?? new MemoryPositionStore();
  }

  async start(
    subscription: TransportSubscription,
    onBatch: (batch: RawBatch, control: BatchControl) => Promise<void>,
  ): Promise<void> {
    const connected = subscription.topics.map(
      (topic) =>
        new Promise<void>((resolve, reject) => {
          this.followers.push(this.follow(topic, subscription, onBatch, resolve, reject));
        }),
    );
    await Promise.all(connected);
  }

  async deadLetter(message: RawMessage, reason: string, details: DeadLetterDetails = {}): Promise<void> {
    const response = await fetch(`${this.description}/${encodeURIComponent(message.topic)}/dead-letters`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...this.authorization() },
      body: JSON.stringify({
        partition: message.partition,
        offset: message.offset,
        key: message.key,
        value: message.value,
        headers: message.headers,
        reason,
        ...(details.attempts === undefined ? {} : { attempts: details.attempts }),
        ...(details.failedAt === undefined ? {} : { failedAt: details.failedAt.toISOString() }),
        ...(details.groupId === undefined ? {} : { groupId: details.groupId }),
      }),
    });
    if (!response.ok)
      throw new Error(
        `the dead letter of ${message.topic}/${message.partition}/${message.offset} was refused: ${response.status} ${await response.text()}`,
      );
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.abort.abort();
    await Promise.all(this.followers);
  }

  private authorization(): Record<string, string> {
    return this.connection.token ? { authorization: `Bearer ${this.connection.token}` } : {};
  }

  /** Reads one topic's stream until stopped, reconnecting from the handled position after a break. */
  private async follow(
    topic: string,
    subscription: TransportSubscription,
    onBatch: (batch: RawBatch, control: BatchControl) => Promise<void>,
    connected: () => void,
    failedToConnect: (error: Error) => void,
  ): Promise<void> {
    let first = true;
    let caughtUp = false;
    let failures = 0;
    while (!this.stopping) {
      const saved = await this.positions.load(subscription.groupId, topic);
      const handled = new Map(saved === undefined ? [] : parseStreamCursor(saved));
      try {
        const query = saved === undefined && !subscription.fromBeginning ? '?from=end' : '';
        const response = await fetch(`${this.description}/${encodeURIComponent(topic)}${query}`, {
          headers: {
            accept: 'text/event-stream',
            ...(saved !== undefined ? { 'last-event-id': saved } : {}),
            ...this.authorization(),
          },
          signal: this.abort.signal,
        });
        if (!response.ok || !response.body) {
          const error = new Error(
            `${this.description}/${topic}: ${response.status} ${await response.text()}`,
          );
          // An answer that will not change (no such topic, no access) ends the first start.
          if (first && response.status >= 400 && response.status < 500) {
            failedToConnect(error);
            return;
          }
          throw error;
        }
        if (first) connected();
        first = false;
        failures = 0;
        const queue: Queued[] = [];
        const parser = createParser({
          onEvent: (event: EventSourceMessage) => {
            if (event.event === 'caught-up') queue.push({ kind: 'caught-up' });
            else if (event.event === 'message' || event.event === undefined)
              queue.push({ kind: 'message', message: streamedMessage.parse(JSON.parse(event.data)) });
          },
        });
        const decoder = new TextDecoder();
        for await (const chunk of response.body) {
          parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
          // Handled before reading on: a slow consumer slows the stream (the server waits on the socket).
          while (queue.length > 0) {
            const items = queue.splice(0, this.connection.readAhead ?? 1_000);
            const complete = await this.handle(items, subscription, onBatch, handled);
            await this.positions.save(subscription.groupId, topic, formatStreamCursor(handled));
            if (!complete) return;
            if (!caughtUp && items.some((item) => item.kind === 'caught-up')) {
              caughtUp = true;
              subscription.onCaughtUp(topic);
            }
          }
        }
      } catch (error) {
        if (this.stopping) return;
        failures += 1;
        const delay = Math.min(10_000, (this.connection.reconnectDelayMs ?? 500) * 2 ** (failures - 1));
        await new Promise((resolve) => setTimeout(resolve, delay));
        void error;
      }
    }
  }

  /** Hands the queued messages over, a batch per partition; false if stopped before the end. */
  private async handle(
    items: readonly Queued[],
    subscription: TransportSubscription,
    onBatch: (batch: RawBatch, control: BatchControl) => Promise<void>,
    handled: Map<number, bigint>,
  ): Promise<boolean> {
    const byPartition = new Map<number, RawMessage[]>();
    for (const item of items) {
      if (item.kind !== 'message') continue;
      const next = handled.get(item.message.partition) ?? 0n;
      // A reconnect may send again what was handled: it is skipped.
      if (BigInt(item.message.offset) < next && handled.has(item.message.partition)) continue;
      const batch = byPartition.get(item.message.partition);
      if (batch) batch.push(item.message);
      else byPartition.set(item.message.partition, [item.message]);
    }
    const isRunning = () => !this.stopping;
    const partitions = [...byPartition.entries()];
    for (let index = 0; index < partitions.length; index += subscription.concurrentPartitions)
      await Promise.all(
        partitions.slice(index, index + subscription.concurrentPartitions).map(([partition, messages]) =>
          onBatch(
            { topic: messages[0]?.topic ?? '', partition, messages },
            {
              handledUpTo: (offset) => handled.set(partition, BigInt(offset) + 1n),
              isRunning,
            },
          ),
        ),
      );
    return !this.stopping;
  }
}

export type { StreamCursor };
