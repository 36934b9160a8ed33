/** One HTTP answer, its body parsed as JSON when it is JSON. */
export interface ApiResponse<T = unknown> {
  readonly status: number;
  readonly headers: Headers;
  readonly etag: string | null;
  readonly text: string;
  readonly body: T;
}

export interface RequestOptions {
  readonly json?: unknown;
  /** A body sent as is, with `contentType`. */
  readonly raw?: string | Buffer;
  readonly contentType?: string;
  readonly headers?: Readonly<Record<string, string>>;
}

/** Talks to a running config service over real HTTP, as the holder of `token` (none: anonymously). */
export class ApiClient {
  constructor(
    readonly baseUrl: string,
    readonly token: string | null = null,
  ) {}

  /** The same service, as the holder of another token (null: anonymously). */
  as(token: string | null): ApiClient {
    return new ApiClient(this.baseUrl, token);
  }

  get<T = unknown>(path: string, options?: RequestOptions): Promise<ApiResponse<T>> {
    return this.send<T>('GET', path, options);
  }
  post<T = unknown>(path: string, json: unknown, options?: RequestOptions): Promise<ApiResponse<T>> {
    return this.send<T>('POST', path, { ...options, json });
  }
  put<T = unknown>(path: string, json: unknown, options?: RequestOptions): Promise<ApiResponse<T>> {
    return this.send<T>('PUT', path, { ...options, json });
  }
  patch<T = unknown>(path: string, json: unknown, options?: RequestOptions): Promise<ApiResponse<T>> {
    return this.send<T>('PATCH', path, { ...options, json });
  }
  delete<T = unknown>(path: string, options?: RequestOptions): Promise<ApiResponse<T>> {
    return this.send<T>('DELETE', path, options);
  }

  async send<T = unknown>(
    method: string,
    path: string,
    options: RequestOptions = {},
  ): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = {
      ...(this.token === null ? {} : { authorization: `Bearer ${this.token}` }),
      ...options.headers,
    };
    let body: string | Buffer | undefined;
    if (options.raw !== undefined) {
      body = options.raw;
      if (options.contentType) headers['content-type'] = options.contentType;
    } else if ('json' in options) {
      body = JSON.stringify(options.json);
      headers['content-type'] = options.contentType ?? 'application/json';
    }
    const response = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body }),
    });
    const text = await response.text();
    const isJson = response.headers.get('content-type')?.includes('json') ?? false;
    return {
      status: response.status,
      headers: response.headers,
      etag: response.headers.get('etag'),
      text,
      body: (isJson && text !== '' ? JSON.parse(text) : text) as T,
    };
  }
}
