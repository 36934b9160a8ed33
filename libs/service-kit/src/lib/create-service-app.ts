import 'reflect-metadata';
import type { DynamicModule, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { ExpressAdapter } from '@nestjs/platform-express';
import { NestPinoLogger } from './nest-logger';
import type { ServiceShellOptions } from './service-shell.options';
import { SERVICE_SHELL_OPTIONS } from './service-shell.options';

export interface ServiceAppOptions {
  /** The Express app to serve on (default: one of its own), e.g. mounted beside other services. */
  readonly httpAdapter?: ExpressAdapter | undefined;
  /** Nest's JSON body parser (default on, up to `bodyLimit`); off when the service installs its own. */
  readonly bodyParser?: boolean;
  readonly bodyLimit?: string;
}

/**
 * A service's Nest application, with Nest's own logs going to the service's JSON logger, not
 * initialised: the caller connects its transports, then calls `init` (or `listen`).
 */
export async function createServiceApp(
  module: Type | DynamicModule,
  options: ServiceAppOptions = {},
): Promise<NestExpressApplication> {
  const app = await NestFactory.create<NestExpressApplication>(
    module,
    options.httpAdapter ?? new ExpressAdapter(),
    // Fail by rejecting, not by exiting the process: the caller decides.
    { bufferLogs: true, abortOnError: false, bodyParser: false },
  );
  app.useLogger(
    new NestPinoLogger(app.get<ServiceShellOptions>(SERVICE_SHELL_OPTIONS, { strict: false }).logger),
  );
  app.flushLogs();
  app.set('x-powered-by', false);
  if (options.bodyParser ?? true) app.useBodyParser('json', { limit: options.bodyLimit ?? '64mb' });
  return app;
}
