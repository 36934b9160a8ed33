import type { ApiClient } from './client';
import type { PipelineSnapshot } from './contract';
import { SseParser } from './sse-parser';

export type ConnectionState = 'connecting' | 'live' | 'disconnected';

export interface SnapshotStreamHandlers {
  snapshot(snapshot: PipelineSnapshot): void;
  state(state: ConnectionState): void;
}

export interface SnapshotStream {
  close(): void;
}

const STREAM_PATH = '/pipeline/stream';
const FIRST_RETRY_MS = 1_000;
const LONGEST_RETRY_MS = 15_000;

/**
 * Follows `GET /api/v1/pipeline/stream` and hands on each `snapshot` event. Without a token it is
 * the browser's EventSource, which reconnects by itself; EventSource cannot send headers, so with
 * a token the same stream is read through fetch with `Authorization: Bearer`, reconnecting the
 * same way. Either way a connection that ends for good (an HTTP error from a proxy while the
 * service restarts) is opened again, later each time it fails, until `close()`.
 */
export function openSnapshotStream(client: ApiClient, handlers: SnapshotStreamHandlers): SnapshotStream {
  return client.token === null
    ? new EventSourceStream(client.url(STREAM_PATH), handlers)
    : new FetchStream(client.url(STREAM_PATH), client.headers({ Accept: 'text/event-stream' }), handlers);
}

function parseSnapshot(data: string): PipelineSnapshot | null {
  try {
    const value = JSON.parse(data) as PipelineSnapshot;
    return typeof value === 'object' && value !== null && 'status' in value && 'lag' in value ? value : null;
  } catch {
    return null;
  }
}

class Backoff {
  private delay = FIRST_RETRY_MS;
  next(): number {
    const delay = this.delay;
    this.delay = Math.min(this.delay * 2, LONGEST_RETRY_MS);
    return delay;
  }
  reset(): void {
    this.delay = FIRST_RETRY_MS;
  }
}

class EventSourceStream implements SnapshotStream {
  private source: EventSource | null = null;
  private timer: number | undefined;
  private closed = false;
  private readonly backoff = new Backoff();

  constructor(
    private readonly url: string,
    private readonly handlers: SnapshotStreamHandlers,
  ) {
    this.open();
  }

  private open(): void {
    this.handlers.state('connecting');
    const source = new EventSource(this.url);
    this.source = source;
    source.addEventListener('open', () => {
      this.backoff.reset();
      this.handlers.state('live');
    });
    source.addEventListener('snapshot', (event) => {
      const snapshot = parseSnapshot((event as MessageEvent<string>).data);
      if (snapshot !== null) this.handlers.snapshot(snapshot);
    });
    source.addEventListener('error', () => {
      this.handlers.state('disconnected');
      // CONNECTING: the browser is already reconnecting. CLOSED: it gave up; start over later.
      if (source.readyState === EventSource.CLOSED && !this.closed) {
        this.timer = window.setTimeout(() => this.open(), this.backoff.next());
      }
    });
  }

  close(): void {
    this.closed = true;
    window.clearTimeout(this.timer);
    this.source?.close();
  }
}

class FetchStream implements SnapshotStream {
  private readonly abort = new AbortController();
  private readonly backoff = new Backoff();

  constructor(
    private readonly url: string,
    private readonly headers: Record<string, string>,
    private readonly handlers: SnapshotStreamHandlers,
  ) {
    void this.run();
  }

  private async run(): Promise<void> {
    while (!this.abort.signal.aborted) {
      this.handlers.state('connecting');
      const parser = new SseParser();
      try {
        const response = await fetch(this.url, { headers: this.headers, signal: this.abort.signal });
        if (!response.ok || response.body === null) throw new Error(`HTTP ${response.status}`);
        this.backoff.reset();
        this.handlers.state('live');
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          for (const message of parser.push(value)) {
            if (message.event !== 'snapshot') continue;
            const snapshot = parseSnapshot(message.data);
            if (snapshot !== null) this.handlers.snapshot(snapshot);
          }
        }
      } catch {
        // Reconnect below, as EventSource does.
      }
      if (this.abort.signal.aborted) return;
      this.handlers.state('disconnected');
      await new Promise((resolve) => window.setTimeout(resolve, parser.retryMs ?? this.backoff.next()));
    }
  }

  close(): void {
    this.abort.abort();
  }
}
