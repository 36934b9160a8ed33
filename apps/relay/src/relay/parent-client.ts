import type { Confirmation, FeedPage } from '@policygen/distribution';
import { feedPageSchema } from '@policygen/distribution';

/** The HTTP side of a relay's parent: the distribution-service or another relay. */
export class ParentClient {
  constructor(
    private readonly baseUrl: string,
    private readonly relayId: string,
  ) {}

  get url(): string {
    return this.baseUrl;
  }

  async feed(after: number, waitMs: number, signal?: AbortSignal): Promise<FeedPage> {
    const url = this.at(`/feeds/${encodeURIComponent(this.relayId)}?after=${after}&waitMs=${waitMs}`);
    const response = await fetch(url, signal ? { signal } : {});
    if (!response.ok) throw new Error(`GET ${url} answered ${response.status}: ${await response.text()}`);
    const parsed = feedPageSchema.safeParse(await response.json());
    if (!parsed.success)
      throw new Error(`GET ${url} gave a page that is not a feed page: ${parsed.error.message}`);
    return parsed.data;
  }

  async blob(sha256: string): Promise<Buffer> {
    const url = this.at(`/blobs/${sha256}`);
    const response = await fetch(url);
    if (!response.ok) throw new Error(`GET ${url} answered ${response.status}`);
    return Buffer.from(await response.arrayBuffer());
  }

  async confirm(confirmations: readonly Confirmation[]): Promise<void> {
    const url = this.at(`/feeds/${encodeURIComponent(this.relayId)}/confirmations`);
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ confirmations }),
    });
    if (!response.ok) throw new Error(`POST ${url} answered ${response.status}: ${await response.text()}`);
  }

  /** A path under the parent's URL, which may itself have a path (`http://host/distribution`). */
  private at(path: string): string {
    const base = this.baseUrl.endsWith('/') ? this.baseUrl : `${this.baseUrl}/`;
    return new URL(path.replace(/^\/+/, ''), base).href;
  }
}
