import { DEAD_LETTER_HEADERS } from '@policygen/sdk';
import type { IncomingMessage, MessageHeaders, MessageProducer, MessagingAdmin } from './messaging';

/**
 * A replay marker: a message the archive appends to a dead-letter topic once it replayed one of
 * its letters (`<partition>/<offset>`), so that every reader of the topic knows it is done with.
 */
export const REPLAY_MARKER_HEADERS = {
  replayOf: 'policygen-replay-of',
  replayedAt: 'policygen-replayed-at',
  replayedBy: 'policygen-replayed-by',
} as const;

const DEAD_LETTER_HEADER_NAMES = new Set<string>(Object.values(DEAD_LETTER_HEADERS));

export interface DeadLetterOrigin {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
}

/** A dead letter as an operator sees it. */
export interface DeadLetter {
  /** The dead-letter topic, and where in it. */
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  /** Where the message was read when it was given up (null: the letter does not say). */
  readonly origin: DeadLetterOrigin | null;
  readonly key: string | null;
  readonly error: string;
  readonly attempts: number | null;
  readonly failedAt: string | null;
  readonly group: string | null;
  /** The message's own headers (the dead-letter ones left out). */
  readonly headers: Readonly<Record<string, string>>;
  /** The value's size in bytes. */
  readonly size: number;
  /** The value, cut to the archive's limit: UTF-8 text if it is, base64 otherwise; null for a tombstone. */
  readonly value: {
    readonly encoding: 'utf8' | 'base64';
    readonly data: string;
    readonly truncated: boolean;
  } | null;
  /** When it was replayed (and by whom), or null while it waits. */
  readonly replayed: { readonly at: string; readonly by: string | null } | null;
}

export interface DeadLetterPage {
  readonly topic: string;
  /** Letters not replayed yet. */
  readonly depth: number;
  readonly total: number;
  readonly items: readonly DeadLetter[];
  /** The `after` of the next page, or null at the end. */
  readonly next: number | null;
}

export interface ReplayOutcome {
  readonly topic: string;
  /** Each letter republished, and where to. */
  readonly replayed: readonly { readonly offset: number; readonly to: string }[];
  /** Letters not republished, and why (already replayed, replayed with another of the same origin, no origin). */
  readonly skipped: readonly { readonly offset: number; readonly reason: string }[];
}

export interface DeadLetterArchiveOptions {
  /** Bytes of a letter's value a listing shows at most (default 4 KiB). */
  readonly valueBytes?: number;
}

/** Messages read from a dead-letter topic per request. */
const READ_CHUNK = 500;

interface Known {
  readonly letters: Map<string, DeadLetter>;
  /** `partition/offset` of letters replayed, with when and by whom. */
  readonly markers: Map<string, { at: string; by: string | null }>;
  /** Next offset to read, per partition. */
  readonly cursors: Map<number, number>;
}

/**
 * The dead-letter topics as an operator handles them: what is in them (read through the admin,
 * outside any consumer group, as far as the topic goes each time it is asked), how many wait, and
 * their replay to where they came from — with their key and headers, plus `policygen-replayed-from`
 * — after which a marker on the dead-letter topic says they are done, so a second replay, or
 * another instance's, skips them. Every consumer group of the origin topic sees a replayed message
 * again: a duplicate for those that had handled it, recognisable by that header and the event's own
 * identity.
 */
export class DeadLetterArchive {
  private readonly topics = new Map<string, Known>();
  private readonly valueBytes: number;

  constructor(
    private readonly admin: MessagingAdmin,
    private readonly producer: MessageProducer,
    options: DeadLetterArchiveOptions = {},
  ) {
    this.valueBytes = options.valueBytes ?? 4096;
  }

  /** Reads what the dead-letter topic gained since last asked. */
  async refresh(topic: string): Promise<void> {
    const known = this.known(topic);
    for (const { partition, start, end } of await this.admin.partitionOffsets(topic)) {
      let next = Math.max(known.cursors.get(partition) ?? start, start);
      while (next < end) {
        const read = await this.admin.readMessages(topic, partition, next, READ_CHUNK);
        if (read.length === 0) break;
        for (const message of read) this.take(known, message);
        next = Number(read[read.length - 1]?.offset) + 1;
      }
      known.cursors.set(partition, next);
    }
  }

  /** Letters not replayed yet, as of the last refresh. */
  depth(topic: string): number {
    const known = this.topics.get(topic);
    if (!known) return 0;
    let depth = 0;
    for (const id of known.letters.keys()) if (!known.markers.has(id)) depth++;
    return depth;
  }

  /** A page of the letters (as of the last refresh), by offset, after `after` (a letter's offset). */
  list(topic: string, options: { readonly after?: number; readonly limit: number }): DeadLetterPage {
    const known = this.known(topic);
    const all = [...known.letters.entries()]
      .map(([id, letter]) => this.withReplay(letter, known.markers.get(id)))
      .sort((a, b) => a.offset - b.offset || a.partition - b.partition);
    const from =
      options.after === undefined ? all : all.filter((letter) => letter.offset > (options.after as number));
    const items = from.slice(0, options.limit);
    return {
      topic,
      depth: this.depth(topic),
      total: all.length,
      items,
      next: from.length > items.length ? (items[items.length - 1]?.offset ?? null) : null,
    };
  }

  /**
   * Republishes letters to their origin topic: those at `offsets` (of any partition), or every one
   * not replayed yet. A letter already replayed is skipped; so is one whose origin another letter
   * of the same request already replayed (several groups gave up the same message).
   */
  async replay(topic: string, options: { readonly offsets?: readonly number[]; readonly by?: string } = {}) {
    await this.refresh(topic);
    const known = this.known(topic);
    const wanted = options.offsets ? new Set(options.offsets) : null;
    const chosen = [...known.letters.entries()]
      .filter(([, letter]) => wanted === null || wanted.has(letter.offset))
      .sort(([, a], [, b]) => a.partition - b.partition || a.offset - b.offset);
    const replayed: { offset: number; to: string }[] = [];
    const skipped: { offset: number; reason: string }[] = [];
    const seen = new Set([...chosen.map(([, letter]) => letter.offset)]);
    for (const offset of wanted ?? [])
      if (!seen.has(offset)) skipped.push({ offset, reason: 'no dead letter at this offset' });
    const origins = new Set<string>();
    for (const [id, letter] of chosen) {
      if (known.markers.has(id)) {
        if (wanted) skipped.push({ offset: letter.offset, reason: 'already replayed' });
        continue;
      }
      if (!letter.origin) {
        skipped.push({ offset: letter.offset, reason: 'the letter names no origin topic' });
        continue;
      }
      const originId = `${letter.origin.topic}/${letter.origin.partition}/${letter.origin.offset}`;
      if (!origins.has(originId)) {
        const message = await this.read(topic, letter.partition, letter.offset);
        await this.producer.send(letter.origin.topic, [
          {
            key: message.key,
            value: message.tombstone ? null : message.value,
            headers: {
              ...ownHeaders(message.headers),
              [DEAD_LETTER_HEADERS.replayedFrom]: `${topic}/${letter.partition}/${letter.offset}`,
            },
          },
        ]);
        origins.add(originId);
        replayed.push({ offset: letter.offset, to: letter.origin.topic });
      } else
        skipped.push({
          offset: letter.offset,
          reason: `its origin ${originId} was replayed with another letter`,
        });
      const at = new Date().toISOString();
      await this.producer.send(topic, [
        {
          key: letter.key,
          value: null,
          headers: {
            [REPLAY_MARKER_HEADERS.replayOf]: id,
            [REPLAY_MARKER_HEADERS.replayedAt]: at,
            ...(options.by ? { [REPLAY_MARKER_HEADERS.replayedBy]: options.by } : {}),
          },
        },
      ]);
      known.markers.set(id, { at, by: options.by ?? null });
    }
    return { topic, replayed, skipped } satisfies ReplayOutcome;
  }

  private known(topic: string): Known {
    let known = this.topics.get(topic);
    if (!known)
      this.topics.set(topic, (known = { letters: new Map(), markers: new Map(), cursors: new Map() }));
    return known;
  }

  private async read(topic: string, partition: number, offset: number): Promise<IncomingMessage> {
    const [message] = await this.admin.readMessages(topic, partition, offset, 1);
    if (!message || Number(message.offset) !== offset)
      throw new Error(`the dead letter ${topic}/${partition}/${offset} is no longer kept`);
    return message;
  }

  private take(known: Known, message: IncomingMessage): void {
    const replayOf = message.headers[REPLAY_MARKER_HEADERS.replayOf];
    if (replayOf !== undefined) {
      known.markers.set(replayOf, {
        at: message.headers[REPLAY_MARKER_HEADERS.replayedAt] ?? new Date(message.timestamp).toISOString(),
        by: message.headers[REPLAY_MARKER_HEADERS.replayedBy] ?? null,
      });
      return;
    }
    const offset = Number(message.offset);
    known.letters.set(`${message.partition}/${offset}`, {
      topic: message.topic,
      partition: message.partition,
      offset,
      origin: originOf(message.headers[DEAD_LETTER_HEADERS.origin]),
      key: message.key,
      error: message.headers[DEAD_LETTER_HEADERS.error] ?? '',
      attempts: numberOrNull(message.headers[DEAD_LETTER_HEADERS.attempts]),
      failedAt: message.headers[DEAD_LETTER_HEADERS.failedAt] ?? null,
      group: message.headers[DEAD_LETTER_HEADERS.group] ?? null,
      headers: ownHeaders(message.headers),
      size: message.value.length,
      value: message.tombstone ? null : this.preview(message.value),
      replayed: null,
    });
  }

  private preview(value: Buffer): NonNullable<DeadLetter['value']> {
    const cut = value.subarray(0, this.valueBytes);
    const truncated = cut.length < value.length;
    // A multi-byte character cut at the end is no sign of binary; control characters are.
    const text = truncated ? cut.toString('utf8').replace(/\ufffd+$/, '') : cut.toString('utf8');
    // eslint-disable-next-line no-control-regex
    const isText = !text.includes('\ufffd') && !/[\u0000-\u0008\u000e-\u001f]/.test(text);
    return isText
      ? { encoding: 'utf8', data: text, truncated }
      : { encoding: 'base64', data: cut.toString('base64'), truncated };
  }

  private withReplay(letter: DeadLetter, marker: { at: string; by: string | null } | undefined): DeadLetter {
    return marker ? { ...letter, replayed: marker } : letter;
  }
}

function ownHeaders(headers: MessageHeaders): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !DEAD_LETTER_HEADER_NAMES.has(name)));
}

function originOf(text: string | undefined): DeadLetterOrigin | null {
  const match = /^(.+)\/(\d+)\/(\d+)$/.exec(text ?? '');
  return match
    ? { topic: match[1] as string, partition: Number(match[2]), offset: match[3] as string }
    : null;
}

function numberOrNull(text: string | undefined): number | null {
  const value = Number(text);
  return text !== undefined && Number.isInteger(value) ? value : null;
}
