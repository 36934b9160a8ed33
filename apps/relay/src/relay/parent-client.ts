import type { Registry } from 'prom-client';
import { Counter } from 'prom-client';
import { z } from 'zod';
import type { Blob, Confirmation, FeedEntry, FeedPage } from '@policygen/distribution';
import { feedEntrySchema, feedPageSchema, plainFeedEntry } from '@policygen/distribution';
import type { ParentResponse } from './parent-http';
import { ParentHttp, isConnectionFailure } from './parent-http';
import { tarEntries } from './tar-entries';

export type ParentRequestKind = 'feed' | 'blobs' | 'confirm';

/** The parent does not hold some of the blobs asked for (its 404 names them). */
export class MissingBlobsError extends Error {
  constructor(
    readonly missing: readonly string[],
    message: string,
  ) {
    super(message);
    this.name = 'MissingBlobsError';
  }
}

/**
 * The parent answered a request with a status that says it is refused as it is (4xx but 401, 408
 * and 429): asking again the same will not help.
 */
export class RefusedByParentError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'RefusedByParentError';
  }
}

/** Statuses that may pass: a parent that does not know this relay's credential yet, a timeout, a rate limit. */
const TRANSIENT_CLIENT_ERRORS = new Set([401, 408, 429]);

/** A 4xx that asking again would only repeat (not a credential rotating, a timeout or a rate limit). */
function isRefusal(status: number): boolean {
  return status >= 400 && status < 500 && !TRANSIENT_CLIENT_ERRORS.has(status);
}

/** A feed page with each entry read on its own: one that is not an entry is refused, not the page. */
const feedEnvelopeSchema = feedPageSchema.extend({ entries: z.array(z.unknown()) });

/** An entry of the parent's feed this relay could not read: left out, its node keeps its bundle. */
export interface RefusedEntry {
  readonly nodeId: string | null;
  readonly problem: string;
}

export type ReadFeedPage = FeedPage & { readonly refused: readonly RefusedEntry[] };

/**
 * The HTTP side of a relay's parent: the distribution-service or another relay. Every request
 * carries the relay's credential (`Authorization: Bearer relay.<relayId>.<mac>`).
 */
export class ParentClient {
  private readonly requests: Counter<'kind'> | null;
  private readonly refusedEntries: Counter | null;
  private readonly authorization: string;
  private readonly http = new ParentHttp();
  /** Whether the parent takes confirmations with a page request (false once it answered 404 to one). */
  private pagesTakeConfirmations = true;

  constructor(
    private readonly baseUrl: string,
    private readonly relayId: string,
    credential: string,
    registry?: Registry,
  ) {
    this.authorization = `Bearer ${credential}`;
    this.requests = registry
      ? new Counter({
          name: 'policygen_relay_parent_requests_total',
          help: 'HTTP requests this relay made to its parent, by kind',
          labelNames: ['kind'],
          registers: [registry],
        })
      : null;
    this.refusedEntries = registry
      ? new Counter({
          name: 'policygen_relay_feed_entries_refused_total',
          help: "Entries of the parent's feed this relay could not read: left out, the others applied",
          registers: [registry],
        })
      : null;
  }

  get url(): string {
    return this.baseUrl;
  }

  /**
   * Up to `limit` entries after `after`, waiting up to `waitMs` for one. An entry that does not
   * read as one is refused alone (`refused`): one bad entry never stalls the relay's cursor.
   */
  async feed(
    after: number,
    waitMs: number,
    limit: number,
    signal?: AbortSignal,
    inlineBytes = 0,
    confirmations: readonly Confirmation[] = [],
  ): Promise<ReadFeedPage> {
    const inline = inlineBytes > 0 ? `&inlineBytes=${inlineBytes}` : '';
    const url = this.at(
      `/feeds/${encodeURIComponent(this.relayId)}?after=${after}&waitMs=${waitMs}&limit=${limit}${inline}`,
    );
    const confirming = confirmations.length > 0 && this.pagesTakeConfirmations;
    const method = confirming ? 'POST' : 'GET';
    const response = await this.request('feed', {
      method,
      url,
      ...(confirming ? { body: JSON.stringify({ confirmations }) } : {}),
      ...(signal ? { signal } : {}),
    });
    if (confirming && (response.status === 404 || response.status === 405)) {
      // A parent older than pages that take confirmations: they go on their own, as before.
      await response.discard();
      this.pagesTakeConfirmations = false;
      await this.confirm(confirmations);
      return this.feed(after, waitMs, limit, signal, inlineBytes);
    }
    if (!response.ok) {
      const message = `${method} ${url} answered ${response.status}: ${(await response.text()).slice(0, 2_000)}`;
      if (confirming && isRefusal(response.status)) throw new RefusedByParentError(response.status, message);
      throw new Error(message);
    }
    const parsed = feedEnvelopeSchema.safeParse(await response.json());
    if (!parsed.success)
      throw new Error(`${method} ${url} gave a page that is not a feed page: ${parsed.error.message}`);
    const entries: FeedEntry[] = [];
    const refused: RefusedEntry[] = [];
    parsed.data.entries.forEach((raw, index) => {
      const plain = plainFeedEntry(raw);
      if (plain) {
        entries.push(plain);
        return;
      }
      // Not plainly an entry: the schema says whether it is one all the same, and if not, why.
      const entry = feedEntrySchema.safeParse(raw);
      if (entry.success) entries.push(entry.data);
      else {
        const nodeId = (raw as { nodeId?: unknown } | null)?.nodeId;
        refused.push({
          nodeId: typeof nodeId === 'string' ? nodeId : null,
          problem: `entry ${index}: ${entry.error.issues.map((issue) => `${issue.path.join('.') || '(entry)'}: ${issue.message}`).join('; ')}`,
        });
      }
    });
    this.refusedEntries?.inc(refused.length);
    return { ...parsed.data, entries, refused };
  }

  /**
   * Many blobs in one request (`POST /blobs`, a tar stream of entries named by digest). Their
   * contents are not checked here: the blob directory refuses one that does not have its digest.
   */
  async blobs(digests: readonly string[], signal?: AbortSignal): Promise<Blob[]> {
    const url = this.at('/blobs');
    const response = await this.request('blobs', {
      method: 'POST',
      url,
      body: JSON.stringify({ digests }),
      ...(signal ? { signal } : {}),
    });
    if (response.status === 404) {
      const text = await response.text();
      const missing = missingOf(text);
      if (missing) throw new MissingBlobsError(missing, `POST ${url} answered 404: ${text}`);
    }
    if (!response.ok) throw new Error(`POST ${url} answered ${response.status}: ${await response.text()}`);
    const asked = new Set(digests);
    const received: Blob[] = [];
    for await (const entry of tarEntries(response.body)) {
      if (!asked.delete(entry.name))
        throw new Error(`POST ${url} sent a blob not asked for: "${entry.name}"`);
      received.push({ sha256: entry.name, content: entry.content });
    }
    if (asked.size > 0) throw new Error(`POST ${url} left out ${asked.size} of the blobs asked for`);
    return received;
  }

  async confirm(confirmations: readonly Confirmation[]): Promise<void> {
    const url = this.at(`/feeds/${encodeURIComponent(this.relayId)}/confirmations`);
    const response = await this.request('confirm', {
      method: 'POST',
      url,
      body: JSON.stringify({ confirmations }),
    });
    if (response.ok) {
      await response.discard();
      return;
    }
    const message = `POST ${url} answered ${response.status}: ${(await response.text()).slice(0, 2_000)}`;
    if (isRefusal(response.status)) throw new RefusedByParentError(response.status, message);
    throw new Error(message);
  }

  /** Closes the kept-alive connections to the parent. */
  close(): void {
    this.http.close();
  }

  /**
   * A request, sent again at once when the connection failed before an answer: a parent closes a
   * kept-alive connection after a few idle seconds, and a request may cross that close. Every
   * request here may be repeated (a page, blobs, confirmations of what is held).
   */
  private async request(
    kind: ParentRequestKind,
    request: {
      readonly method: 'GET' | 'POST';
      readonly url: string;
      readonly body?: string;
      readonly signal?: AbortSignal;
    },
  ): Promise<ParentResponse> {
    const headers: Record<string, string> = { authorization: this.authorization };
    if (request.body !== undefined) headers['content-type'] = 'application/json';
    for (let attempt = 1; ; attempt++) {
      this.requests?.inc({ kind });
      try {
        return await this.http.send({ ...request, headers });
      } catch (error) {
        if (attempt >= 3 || request.signal?.aborted || !isConnectionFailure(error)) throw error;
      }
    }
  }

  /** A path under the parent's URL, which may itself have a path (`http://host/distribution`). */
  private at(path: string): string {
    const base = this.baseUrl.endsWith('/') ? this.baseUrl : `${this.baseUrl}/`;
    return new URL(path.replace(/^\/+/, ''), base).href;
  }
}

/** The digests a `POST /blobs` 404 names, or undefined when the body does not say. */
function missingOf(body: string): string[] | undefined {
  try {
    const parsed: unknown = JSON.parse(body);
    const missing = (parsed as { missing?: unknown }).missing;
    return Array.isArray(missing) && missing.every((digest) => typeof digest === 'string')
      ? (missing as string[])
      : undefined;
  } catch {
    return undefined;
  }
}
