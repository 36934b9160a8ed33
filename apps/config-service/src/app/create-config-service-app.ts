import 'reflect-metadata';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { SwaggerModule } from '@nestjs/swagger';
import { Registry } from 'prom-client';
import type { Authenticator, ReadinessCheck } from '@policygen/service-kit';
import {
  collectProcessMetrics,
  createServiceApp,
  createServiceLogger,
  pingCheck,
} from '@policygen/service-kit';
import { MemoryApiTokenStore } from '@policygen/store';
import { ApiTokenRegistry } from '../api-tokens/api-token-registry';
import { installRequestBodies } from '../http/request-bodies';
import { RevisionedExpressAdapter } from '../http/revisioned';
import { buildOpenApiDocument } from '../openapi/openapi-document';
import { PipelineService } from '../pipeline/pipeline.service';
import { ConfigStateService } from '../state/config-state.service';
import type { ConfigServiceOptions } from './config-service-options';
import { DEFAULT_BODY_LIMIT_BYTES } from './config-service-options';
import { ConfigServiceModule } from './config-service.module';
import { API_TOKENS } from './tokens';

/**
 * The config service as a Nest application, initialised (migrated, configuration loaded, outbox
 * producer connected, the pipeline's events followed) but not listening: `main.ts` and the tests
 * call `listen`.
 */
export async function createConfigServiceApp(options: ConfigServiceOptions): Promise<NestExpressApplication> {
  const registry = options.registry ?? new Registry();
  if (options.defaultMetrics ?? true) collectProcessMetrics(registry);
  const readiness: ReadinessCheck[] = [];
  let status: () => unknown = () => ({ status: 'starting' });
  const logger = options.logger ?? createServiceLogger('config-service');
  const apiTokenStore = options.apiTokens ?? new MemoryApiTokenStore();
  await apiTokenStore.migrate();
  const apiTokens = new ApiTokenRegistry(
    apiTokenStore,
    options.environmentTokens ?? {},
    logger.child({ component: 'api-tokens' }),
  );
  apiTokens.registerMetrics(registry);
  const app = await createServiceApp(
    ConfigServiceModule.forRoot(
      options,
      {
        service: 'config-service',
        logger,
        authenticator: apiTokens,
        registry,
        readiness: () => [...readiness, ...(options.extraReadiness?.() ?? [])],
        status: () => status(),
      },
      apiTokens,
    ),
    {
      // On the Express app given (the embedded pipeline mounts it beside the other services) or its own.
      httpAdapter: new RevisionedExpressAdapter(options.httpAdapter?.getInstance()),
      bodyParser: false,
    },
  );
  installRequestBodies(app, options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES);
  SwaggerModule.setup('api/docs', app, buildOpenApiDocument());
  await app.init();
  const state = app.get(ConfigStateService);
  const pipeline = app.get(PipelineService);
  readiness.push(
    pingCheck('store', () => options.store.ping(), 'the configuration store'),
    pipeline.busReadiness,
    pipeline.readiness,
  );
  status = () => ({ revision: state.current.revision });
  return app;
}

/** The config API's authenticator: who its tokens stand for, for routes served beside it (the event stream). */
export function configServiceAuthenticator(app: NestExpressApplication): Authenticator {
  return app.get<ApiTokenRegistry>(API_TOKENS);
}
