import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { ExpressAdapter } from '@nestjs/platform-express';
import { SwaggerModule } from '@nestjs/swagger';
import { installRequestBodies } from '../http/request-bodies';
import { RevisionedInterceptor } from '../http/revisioned';
import { buildOpenApiDocument } from '../openapi/openapi-document';
import type { ConfigServiceOptions } from './config-service-options';
import { DEFAULT_BODY_LIMIT_BYTES } from './config-service-options';
import { ConfigServiceModule } from './config-service.module';

/**
 * The config service as a Nest application, initialised (migrated, configuration loaded, outbox
 * producer connected) but not listening: `main.ts` and the tests call `listen`.
 */
export async function createConfigServiceApp(options: ConfigServiceOptions): Promise<NestExpressApplication> {
  const app = await NestFactory.create<NestExpressApplication>(
    ConfigServiceModule.forRoot(options),
    options.httpAdapter ?? new ExpressAdapter(),
    {
      bodyParser: false,
      // Fail by rejecting, not by exiting the process: the caller decides.
      abortOnError: false,
      logger: options.logger ?? ['error', 'warn', 'log'],
    },
  );
  app.set('x-powered-by', false);
  installRequestBodies(app, options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES);
  app.useGlobalInterceptors(new RevisionedInterceptor());
  SwaggerModule.setup('api/docs', app, buildOpenApiDocument());
  await app.init();
  return app;
}
