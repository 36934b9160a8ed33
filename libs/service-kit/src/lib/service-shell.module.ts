import { Inject, Module, RequestMethod } from '@nestjs/common';
import type { DynamicModule, MiddlewareConsumer, NestModule } from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import { CredentialGuard } from './auth/credential.guard';
import { TerminusModule } from '@nestjs/terminus';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pinoHttp } from 'pino-http';
import { HealthController } from './health.controller';
import { HttpMetricsMiddleware } from './http-metrics.middleware';
import { MetricsController } from './metrics.controller';
import { ServerErrorFilter } from './server-error.filter';
import { ServiceLifecycle } from './service-lifecycle';
import type { ServiceShellOptions } from './service-shell.options';
import { SERVICE_SHELL_OPTIONS } from './service-shell.options';
import { StatusController } from './status.controller';

const ALL_ROUTES = { path: '{*splat}', method: RequestMethod.ALL };
const DEFAULT_QUIET_PATHS = ['/health/live', '/health/ready', '/metrics'];

/**
 * One JSON line per request with method, path, status and duration; 5xx with their stack. pino-http
 * alone: nestjs-pino ran every request inside an AsyncLocalStorage, whose first use turns on V8's
 * promise hooks for the whole process for good (~0.3 µs on every promise after it).
 */
function requestLog(options: ServiceShellOptions) {
  const quiet = new Set(options.quietPaths ?? DEFAULT_QUIET_PATHS);
  return pinoHttp<IncomingMessage, ServerResponse>({
    logger: options.logger,
    // Only what says what was asked and answered: headers carry credentials.
    serializers: {
      req: (request: IncomingMessage & { originalUrl?: string }) => ({
        method: request.method,
        path: (request.originalUrl ?? request.url ?? '').split('?')[0],
      }),
      res: (response: ServerResponse) => ({ statusCode: response.statusCode }),
    },
    customLogLevel: (request, response, error) => {
      // Probes and scrapes come every few seconds; a probe's 503 is its answer ("not ready
      // yet"), which readiness itself reports, not a failure to log.
      if (quiet.has((request.url ?? '').split('?')[0] ?? '')) return 'debug';
      if (error || response.statusCode >= 500) return 'error';
      if (response.statusCode >= 400) return 'warn';
      return 'info';
    },
    customSuccessMessage: (request, response, ms) =>
      `${request.method} ${(request.url ?? '').split('?')[0]} ${response.statusCode} ${Math.round(ms)} ms`,
    customErrorMessage: (request, response) =>
      `${request.method} ${(request.url ?? '').split('?')[0]} ${response.statusCode} failed`,
  });
}

/**
 * What every Policygen service is made of besides its own work: the request log (JSON, one line
 * per request with method, path, status and duration; 5xx with their stack), `/health/live`,
 * `/health/ready`, `/status`, `/metrics` with the HTTP durations, and the 5xx filter.
 */
@Module({})
export class ServiceShellModule implements NestModule {
  static forRoot(options: ServiceShellOptions): DynamicModule {
    return {
      module: ServiceShellModule,
      imports: [TerminusModule.forRoot({ logger: false })],
      controllers: [HealthController, StatusController, MetricsController],
      providers: [
        { provide: SERVICE_SHELL_OPTIONS, useValue: options },
        { provide: APP_FILTER, useClass: ServerErrorFilter },
        { provide: APP_GUARD, useClass: CredentialGuard },
        ServiceLifecycle,
        HttpMetricsMiddleware,
      ],
      exports: [SERVICE_SHELL_OPTIONS, ServiceLifecycle],
    };
  }

  constructor(@Inject(SERVICE_SHELL_OPTIONS) private readonly options: ServiceShellOptions) {}

  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(requestLog(this.options), HttpMetricsMiddleware).forRoutes(ALL_ROUTES);
  }
}
