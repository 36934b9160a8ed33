import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import express from 'express';
import { Registry } from 'prom-client';
import { z } from 'zod';
import {
  ServiceShellModule,
  apiProxy,
  collectProcessMetrics,
  createServiceApp,
  dashboardFiles,
  env,
  runService,
} from '@policygen/service-kit';

/**
 * The ops dashboard as a service of a deployment: the page (dist/dashboard), and `/api` passed to
 * the config-service, whose public API is all the page reads. Ready when that API answers.
 */
runService({
  name: 'dashboard',
  environment: z.object({
    CONFIG_SERVICE_URL: env.url(),
    HOST: env.host('0.0.0.0'),
    PORT: env.port(3007),
    LOG_LEVEL: env.logLevel(),
  }),
  async start(settings, logger) {
    const api = settings.CONFIG_SERVICE_URL.replace(/\/+$/, '');
    const registry = new Registry();
    collectProcessMetrics(registry);

    @Module({
      imports: [
        ServiceShellModule.forRoot({
          service: 'dashboard',
          logger,
          registry,
          readiness: () => [
            {
              name: 'config-api',
              check: () =>
                fetch(`${api}/health/live`, { signal: AbortSignal.timeout(2_000) }).then(
                  (answer) =>
                    answer.ok ? { ready: true } : { ready: false, reason: `${api} answers ${answer.status}` },
                  (error: unknown) => ({
                    ready: false,
                    reason: `${api} does not answer: ${(error as Error).message}`,
                  }),
                ),
            },
          ],
          status: () => ({ api }),
        }),
      ],
    })
    class DashboardModule {}

    const server = express();
    // Before Nest's routes: the page's files and /api; everything else (health, metrics) is Nest's.
    server.use(apiProxy(api));
    server.use(dashboardFiles());
    const app = await createServiceApp(DashboardModule, {
      httpAdapter: new ExpressAdapter(server),
      bodyParser: false,
    });
    await app.init();
    return { app, stop: () => app.close() };
  },
});
