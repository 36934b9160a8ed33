import { Inject, Injectable } from '@nestjs/common';
import type { NestMiddleware } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { Histogram } from 'prom-client';
import type { ServiceShellOptions } from './service-shell.options';
import { SERVICE_SHELL_OPTIONS } from './service-shell.options';

export const HTTP_DURATION_METRIC = 'policygen_http_request_duration_seconds';

/**
 * Every request's duration by method, route pattern (not the path: `/nodes/:id`, so the series stay
 * few) and status code.
 */
@Injectable()
export class HttpMetricsMiddleware implements NestMiddleware {
  private readonly durations: Histogram<'method' | 'route' | 'status_code'>;

  constructor(@Inject(SERVICE_SHELL_OPTIONS) options: ServiceShellOptions) {
    const existing = options.registry.getSingleMetric(HTTP_DURATION_METRIC);
    this.durations =
      (existing as Histogram<'method' | 'route' | 'status_code'> | undefined) ??
      new Histogram({
        name: HTTP_DURATION_METRIC,
        help: 'HTTP requests served, by method, route pattern and status code',
        labelNames: ['method', 'route', 'status_code'],
        buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
        registers: [options.registry],
      });
  }

  use(request: Request, response: Response, next: NextFunction): void {
    const started = process.hrtime.bigint();
    response.once('finish', () => {
      const route = (request.route as { path?: unknown } | undefined)?.path;
      this.durations.observe(
        {
          method: request.method,
          route: typeof route === 'string' ? route : 'unmatched',
          status_code: String(response.statusCode),
        },
        Number(process.hrtime.bigint() - started) / 1e9,
      );
    });
    next();
  }
}
