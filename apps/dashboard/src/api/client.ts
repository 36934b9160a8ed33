import type { FailureFilter, FailurePage, LagReport, NodeStatus, PipelineStatus } from './contract';

/** The config service's API, on the page's own origin whatever path the dashboard is served under. */
export const API_BASE = '/api/v1';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly path: string,
    detail: string,
  ) {
    super(`${path}: HTTP ${status}${detail ? ` — ${detail}` : ''}`);
    this.name = 'ApiError';
  }
}

export class ApiClient {
  constructor(readonly token: string | null) {}

  /** The headers every request carries: `Authorization: Bearer` when there is a token. */
  headers(extra: Record<string, string> = {}): Record<string, string> {
    return this.token === null ? { ...extra } : { ...extra, Authorization: `Bearer ${this.token}` };
  }

  url(path: string): string {
    return `${API_BASE}${path}`;
  }

  status(): Promise<PipelineStatus> {
    return this.get('/pipeline/status');
  }

  lag(windowSeconds = 60): Promise<LagReport> {
    return this.get(`/pipeline/lag?window=${windowSeconds}`);
  }

  failures(filter: FailureFilter, limit = 50, signal?: AbortSignal): Promise<FailurePage> {
    const query = new URLSearchParams({
      limit: String(limit),
      code: filter.code,
      directive: filter.directive,
      rule: filter.rule,
    });
    return this.get(`/failures?${query.toString()}`, signal);
  }

  nodeStatus(nodeId: string): Promise<NodeStatus> {
    return this.get(`/nodes/${encodeURIComponent(nodeId)}/status`);
  }

  explain(nodeId: string): Promise<unknown> {
    return this.get(`/nodes/${encodeURIComponent(nodeId)}/explain`);
  }

  async get<T>(path: string, signal?: AbortSignal): Promise<T> {
    const init: RequestInit = { headers: this.headers({ Accept: 'application/json' }) };
    if (signal) init.signal = signal;
    const response = await fetch(this.url(path), init);
    if (!response.ok) {
      const detail = await response.text().catch(() => '');
      throw new ApiError(response.status, path, detail.slice(0, 200));
    }
    return (await response.json()) as T;
  }
}
