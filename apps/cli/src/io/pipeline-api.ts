import type { FailurePage, LagReport, PipelineStatus } from '@policygen/config-service';
import { InputError } from '../errors';

export type { FailurePage, LagReport, PipelineStatus, StageLag } from '@policygen/config-service';

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

  private async get<T>(path: string): Promise<T> {
    const url = `${this.base}${path}`;
    let response: Response;
    try {
      response = await fetch(url, {
        headers: this.token ? { authorization: `Bearer ${this.token}` } : {},
        signal: AbortSignal.timeout(15_000),
      });
    } catch (error) {
      throw new Error(`cannot reach ${url}`, { cause: error });
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
