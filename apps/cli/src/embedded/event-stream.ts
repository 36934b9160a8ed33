import type { Response, Router } from 'express';
import express from 'express';
import type { Logger } from 'pino';
import { Counter, Gauge } from 'prom-client';
import type { Registry } from 'prom-client';
import { z } from 'zod';
import type { LoggedMessage, MessageLog, MessageProducer, MessagingAdmin } from '@policygen/messaging';
import type { Authenticator } from '@policygen/service-kit';
import { bearerToken, refusalOf } from '@policygen/service-kit';
import { deadLetterHeaders } from '@policygen/sdk';

export interface EventStreamOptions {
  readonly log: MessageLog;
  readonly producer: MessageProducer;
  readonly admin: MessagingAdmin;
  readonly logger: Logger;
  readonly registry: Registry;
  /**
   * Who may read (a reader's API token) and send dead letters (an editor's): the config API's
   * tokens. Without a credential it knows: 401.
   */
  readonly authenticator: Authenticator;
  readonly keepAliveMs?: number;
}

/** Messages read from a partition per turn: partitions take turns, so none waits behind a busy one. */
const READ_PER_TURN = 100;

const deadLetterBody = z.object({
  partition: z.number().int().nonnegative(),
  offset: z.string().regex(/^\d+$/, { message: 'a decimal offset' }),
  key: z.string().nullable(),
  value: z.string().nullable(),
  headers: z.record(z.string(), z.string()),
  reason: z.string().min(1),
  attempts: z.number().int().positive().optional(),
  failedAt: z.string().datetime().optional(),
  groupId: z.string().min(1).optional(),
});

/** `0:13,1:5`: the next offset of each partition; each event's id, given back as `Last-Event-ID`. */
export function parseCursor(text: string): Map<number, number> | null {
  const positions = new Map<number, number>();
  if (text.trim() === '') return positions;
  for (const part of text.split(',')) {
    const match = /^\s*(\d{1,9}):(\d{1,15})\s*$/.exec(part);
    if (!match) return null;
    positions.set(Number(match[1]), Number(match[2]));
  }
  return positions;
}

export function formatCursor(positions: readonly number[]): string {
  return positions.map((offset, partition) => `${partition}:${offset}`).join(',');
}

/**
 * The bus's topics as server-sent events, for processes outside `policygen start` (the SDK's
 * event-stream transport): `GET /events/<topic>` from the beginning, from the end (`?from=end`)
 * or from a position (`Last-Event-ID`); one `caught-up` event once what was there at connection
 * is sent; then live. `POST /events/<topic>/dead-letters` puts a message a consumer gave up on
 * into `<topic>.dlq`.
 */
export function eventStreamRouter(options: EventStreamOptions): Router {
  const { log, logger } = options;
  const clients = new Gauge({
    name: 'policygen_event_stream_clients',
    help: 'Clients connected to the event stream, per topic',
    labelNames: ['topic'],
    registers: [options.registry],
  });
  const sent = new Counter({
    name: 'policygen_event_stream_messages_total',
    help: 'Messages sent on the event stream, per topic',
    labelNames: ['topic'],
    registers: [options.registry],
  });
  const router = express.Router();
  router.use((request, response, next) => {
    const token = bearerToken(request.headers.authorization);
    void (async () => (token === null ? null : options.authenticator.authenticate(token)))().then(
      (principal) => {
        if (!principal) {
          response.setHeader('WWW-Authenticate', 'Bearer realm="policygen-events"');
          response.status(401).json({
            statusCode: 401,
            message:
              token === null
                ? 'a credential is required: Authorization: Bearer <token>'
                : 'the credential is not valid',
          });
          return;
        }
        const refusal = refusalOf(principal, undefined, request.method);
        if (refusal !== null) {
          response.status(403).json({ statusCode: 403, message: refusal });
          return;
        }
        next();
      },
      (error: unknown) => next(error),
    );
  });

  router.get('/:topic', (request, response) => {
    const topic = request.params['topic'] as string;
    const ranges = log.ranges(topic);
    if (!ranges) {
      response.status(404).json({ statusCode: 404, message: `no topic ${topic}` });
      return;
    }
    const given = request.header('last-event-id') ?? queryText(request.query['lastEventId']);
    const cursor = given === undefined ? new Map<number, number>() : parseCursor(given);
    if (!cursor) {
      response.status(400).json({
        statusCode: 400,
        message: `Last-Event-ID: not a position (<partition>:<offset>,…): "${given}"`,
      });
      return;
    }
    const fromEnd = given === undefined && request.query['from'] === 'end';
    const positions = ranges.map(({ start, end }, partition) => {
      const at = cursor.get(partition);
      if (at !== undefined) return Math.min(Math.max(at, start), end);
      return fromEnd ? end : start;
    });
    const caughtUpAt = ranges.map(({ end }) => end);
    response.status(200);
    response.setHeader('content-type', 'text/event-stream; charset=utf-8');
    response.setHeader('cache-control', 'no-cache');
    response.setHeader('x-accel-buffering', 'no');
    response.flushHeaders();
    clients.inc({ topic });
    logger.info({ topic, from: formatCursor(positions) }, 'event stream client connected');
    const connection = new StreamConnection(topic, positions, caughtUpAt, log, response, () =>
      sent.inc({ topic }),
    );
    request.on('close', () => {
      connection.close();
      clients.dec({ topic });
      logger.info({ topic, at: formatCursor(positions) }, 'event stream client disconnected');
    });
    void connection.run(options.keepAliveMs ?? 15_000).catch((error: unknown) => {
      logger.warn({ topic, err: error }, 'event stream ended by an error');
      response.destroy();
    });
  });

  router.post('/:topic/dead-letters', express.json({ limit: '2mb' }), async (request, response) => {
    const topic = request.params['topic'] as string;
    if (!log.ranges(topic)) {
      response.status(404).json({ statusCode: 404, message: `no topic ${topic}` });
      return;
    }
    const body = deadLetterBody.safeParse(request.body);
    if (!body.success) {
      response.status(400).json({
        statusCode: 400,
        message: 'not a dead letter',
        errors: body.error.issues.map((issue) => ({
          path: ['$', ...issue.path.map(String)].join('.'),
          message: issue.message,
        })),
      });
      return;
    }
    const letter = body.data;
    const deadLetters = `${topic}.dlq`;
    await options.admin.createTopics([{ name: deadLetters, partitions: 1 }]);
    await options.producer.send(deadLetters, [
      {
        key: letter.key,
        value: letter.value,
        headers: deadLetterHeaders({ ...letter, topic }, letter.reason, {
          ...(letter.attempts === undefined ? {} : { attempts: letter.attempts }),
          ...(letter.failedAt === undefined ? {} : { failedAt: new Date(letter.failedAt) }),
          ...(letter.groupId === undefined ? {} : { groupId: letter.groupId }),
        }),
      },
    ]);
    logger.warn(
      { topic, partition: letter.partition, offset: letter.offset, reason: letter.reason },
      'a consumer sent a message to the DLQ',
    );
    response.status(202).json({ topic: deadLetters });
  });
  return router;
}

function queryText(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** One client's stream: partitions in turns, the socket's pace, live once the log is read. */
class StreamConnection {
  private closed = false;
  private appended = false;
  private wake: (() => void) | null = null;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly topic: string,
    private readonly positions: number[],
    private readonly caughtUpAt: readonly number[] | null,
    private readonly log: MessageLog,
    private readonly response: Response,
    private readonly counted: () => void,
  ) {
    this.unsubscribe = log.onAppend((appended) => {
      if (appended !== topic) return;
      this.appended = true;
      this.wake?.();
    });
  }

  close(): void {
    this.closed = true;
    this.unsubscribe();
    this.wake?.();
  }

  async run(keepAliveMs: number): Promise<void> {
    let caughtUp = false;
    while (!this.closed) {
      const sentAny = await this.sendTurn();
      if (
        !caughtUp &&
        this.caughtUpAt &&
        this.positions.every((at, partition) => at >= (this.caughtUpAt?.[partition] ?? 0))
      ) {
        caughtUp = true;
        const positions = Object.fromEntries(this.positions.map((at, partition) => [String(partition), at]));
        await this.write(
          `event: caught-up\nid: ${formatCursor(this.positions)}\ndata: ${JSON.stringify({ positions })}\n\n`,
        );
      }
      if (!sentAny) await this.idle(keepAliveMs);
    }
  }

  /** One read of every partition; true if anything was sent. */
  private async sendTurn(): Promise<boolean> {
    this.appended = false;
    let sentAny = false;
    const ranges = this.log.ranges(this.topic) ?? [];
    for (let partition = 0; partition < this.positions.length && !this.closed; partition++) {
      const end = ranges[partition]?.end ?? 0;
      const from = Math.max(this.positions[partition] ?? 0, ranges[partition]?.start ?? 0);
      const messages = this.log.read(this.topic, partition, from, READ_PER_TURN);
      for (const message of messages) {
        this.positions[partition] = message.offset + 1;
        await this.write(this.event(message));
        this.counted();
        sentAny = true;
      }
      // A short read went to the end: the gaps compaction left after the last message are passed too.
      if (messages.length < READ_PER_TURN)
        this.positions[partition] = Math.max(this.positions[partition] ?? 0, end);
    }
    return sentAny;
  }

  private event(message: LoggedMessage): string {
    const data = JSON.stringify({
      topic: this.topic,
      partition: message.partition,
      offset: String(message.offset),
      key: message.key,
      value: message.value === null ? null : message.value.toString('utf8'),
      headers: message.headers,
      timestamp: message.timestamp,
    });
    return `event: message\nid: ${formatCursor(this.positions)}\ndata: ${data}\n\n`;
  }

  private idle(keepAliveMs: number): Promise<void> {
    if (this.appended || this.closed) {
      this.appended = false;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.wake = null;
        void this.write(': keepalive\n\n').then(resolve, resolve);
      }, keepAliveMs);
      this.wake = () => {
        clearTimeout(timer);
        this.wake = null;
        this.appended = false;
        resolve();
      };
    });
  }

  /** Waits for the socket when its buffer is full: a slow reader slows its own stream only. */
  private async write(text: string): Promise<void> {
    if (this.closed) return;
    if (this.response.write(text)) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        this.response.off('drain', done);
        this.response.off('close', done);
        resolve();
      };
      this.response.on('drain', done);
      this.response.on('close', done);
    });
  }
}
