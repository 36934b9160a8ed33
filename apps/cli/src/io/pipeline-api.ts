import type {
  ChangePreview,
  DeadLetterTopic,
  FailurePage,
  LagReport,
  PipelineStatus,
} from '@policygen/config-service';
import type { DeadLetterPage, ReplayOutcome } from '@policygen/messaging';
import type { ValidationIssue } from '@policygen/engine';
import { InputError } from '../errors';

export type { DeadLetter, DeadLetterPage, ReplayOutcome } from '@policygen/messaging';
export type {
  ChangePreview,
  DeadLetterTopic,
  FailurePage,
  LagReport,
  NodeBundleDiff,
  PipelineStatus,
  StageLag,
} from '@policygen/config-service';

/** The API refused the request as invalid (400): its message and issues, each with its JSON path. */
export class RequestRefused extends Error {
  override readonly name = 'RequestRefused';

  constructor(
    message: string,
    readonly issues: readonly ValidationIssue[],
  ) {
    super(message);
  }
}

/** The config API of a running pipeline (`npm start`, or the config-service of a deployment). */
export class PipelineApi {
  private readonly base: string;

  constructor(
    url: string,
    private readonly token: string | undefined,
  ) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new InputError(`--url: not a URL: ${url}`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
      throw new InputError(`--url: an http(s) URL, not ${url}`);
    this.base = url.replace(/\/+$/, '');
  }

  status(): Promise<PipelineStatus> {
    return this.get('/api/v1/pipeline/status');
  }

  lag(windowSeconds: number): Promise<LagReport> {
    return this.get(`/api/v1/pipeline/lag?window=${windowSeconds}`);
  }

  failures(limit: number): Promise<FailurePage> {
    return this.get(`/api/v1/failures?limit=${limit}`);
  }

  /** What committing the change set would do, committing nothing; an invalid change set throws `RequestRefused`. */
  previewChange(changeSet: unknown): Promise<ChangePreview> {
    return this.request('/api/v1/changes?dryRun=true', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(changeSet),
    });
  }

  /** Every dead-letter topic of the deployment, with its depth. */
  deadLetterTopics(): Promise<{ topics: DeadLetterTopic[] }> {
    return this.get('/api/v1/dead-letters');
  }

  deadLetters(topic: string, limit: number, after?: number): Promise<DeadLetterPage> {
    const query = new URLSearchParams({
      limit: String(limit),
      ...(after === undefined ? {} : { after: String(after) }),
    });
    return this.get(`/api/v1/dead-letters/${encodeURIComponent(topic)}?${query.toString()}`);
  }

  /** Republishes dead letters to their origin: those at `offsets`, or every one not replayed yet. */
  replayDeadLetters(topic: string, offsets?: readonly number[]): Promise<ReplayOutcome> {
    return this.request('/api/v1/dead-letters/replay', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ topic, ...(offsets && offsets.length > 0 ? { offsets } : {}) }),
    });
  }

  private get<T>(path: string): Promise<T> {
    return this.request(path, {});
  }

  private async request<T>(
    path: string,
    init: { method?: string; headers?: Record<string, string>; body?: string },
  ): Promise<T> {
    const url = `${this.base}${path}`;
    let response: Response;
    try {
      response = await fetch(url, {
        ...init,
        headers: { ...init.headers, ...(this.token ? { authorization: `Bearer ${this.token}` } : {}) },
        // A preview generates nodes before and after: it may take longer than a read.
        signal: AbortSignal.timeout(init.method === 'POST' ? 120_000 : 15_000),
      });
    } catch (error) {
      throw new Error(`cannot reach ${url}`, { cause: error });
    }
    if (response.status === 400) {
      const refusal = (await response.json().catch(() => ({}))) as {
        message?: string;
        issues?: ValidationIssue[];
      };
      throw new RequestRefused(refusal.message ?? `${url} answered 400`, refusal.issues ?? []);
    }
    if (response.status === 401 || response.status === 403)
      throw new InputError(
        `${url} answered ${response.status}: give a credential with --token or POLICYGEN_TOKEN`,
      );
    if (!response.ok)
      throw new Error(`${url} answered ${response.status}: ${(await response.text()).slice(0, 300)}`);
    return (await response.json()) as T;
  }
}
