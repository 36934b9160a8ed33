import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import type { IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

/** A parent's answer: its status, and its body as a stream (`text`/`json` read it whole). */
export interface ParentResponse {
  readonly status: number;
  readonly ok: boolean;
  readonly body: IncomingMessage;
  text(): Promise<string>;
  json(): Promise<unknown>;
  /** Reads the body to its end, unread: the connection serves the next request only then. */
  discard(): Promise<void>;
}

export interface ParentRequest {
  readonly method: 'GET' | 'POST';
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly body?: string;
  readonly signal?: AbortSignal;
}

/** The longest a parent may take to answer (a long poll waits at most a minute) or to go on sending. */
const IDLE_TIMEOUT_MS = 5 * 60_000;

/**
 * Requests to the parent on kept-alive connections with node:http: a relay makes a few a second,
 * and `fetch` (undici, its web streams and text decoding) cost it more than a quarter of its time
 * (profiled); the body is read as the Buffers the socket gives.
 */
export class ParentHttp {
  private readonly http = new HttpAgent({ keepAlive: true, maxSockets: 16 });
  private readonly https = new HttpsAgent({ keepAlive: true, maxSockets: 16 });

  send(request: ParentRequest): Promise<ParentResponse> {
    const url = new URL(request.url);
    const secure = url.protocol === 'https:';
    const send = secure ? httpsRequest : httpRequest;
    const headers: Record<string, string | number> = { ...request.headers };
    if (request.body !== undefined) headers['content-length'] = Buffer.byteLength(request.body);
    return new Promise((resolve, reject) => {
      const outgoing = send(
        url,
        {
          method: request.method,
          headers,
          agent: secure ? this.https : this.http,
          ...(request.signal ? { signal: request.signal } : {}),
        },
        (incoming) => resolve(responseOf(incoming)),
      );
      outgoing.setTimeout(IDLE_TIMEOUT_MS, () =>
        outgoing.destroy(new Error(`${request.method} ${request.url}: no answer for ${IDLE_TIMEOUT_MS} ms`)),
      );
      outgoing.on('error', reject);
      outgoing.end(request.body);
    });
  }

  close(): void {
    this.http.destroy();
    this.https.destroy();
  }
}

function responseOf(incoming: IncomingMessage): ParentResponse {
  const status = incoming.statusCode ?? 0;
  const whole = async (): Promise<Buffer> => {
    const chunks: Buffer[] = [];
    for await (const chunk of incoming) chunks.push(chunk as Buffer);
    return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
  };
  return {
    status,
    ok: status >= 200 && status < 300,
    body: incoming,
    text: async () => (await whole()).toString('utf8'),
    json: async () => JSON.parse((await whole()).toString('utf8')) as unknown,
    discard: async () => {
      for await (const chunk of incoming) void chunk;
    },
  };
}

/**
 * A request that failed on its way (a connection reset, refused, a name not found), as `fetch`'s
 * network failures: sent again at once, a few times. An abort is not one.
 */
export function isConnectionFailure(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' && code !== 'ABORT_ERR';
}
