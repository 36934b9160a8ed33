import { createServer } from 'node:http';
import { Option } from 'commander';
import express from 'express';
import { Registry } from 'prom-client';
import { apiProxy, collectProcessMetrics, dashboardFiles } from '@policygen/service-kit';
import { EXIT_OK, InputError } from '../errors';
import { writeLine } from '../io/streams';
import type { CommandDefinition } from './context';

interface DashboardOptions {
  readonly api: string;
  readonly port: number;
  readonly host: string;
}

/** The dashboard on its own (a service of the compose stack): the page, and `/api` passed to the config service. */
export const defineDashboard: CommandDefinition = (program, { streams, exitWith }) => {
  program
    .command('dashboard')
    .description(
      'serve the ops dashboard for a running pipeline: lag, throughput, failing nodes, relays, consumer lag',
    )
    .addOption(
      new Option('--api <url>', 'the config service (its /api is passed through)')
        .env('CONFIG_SERVICE_URL')
        .makeOptionMandatory(),
    )
    .addOption(new Option('-p, --port <port>', 'the HTTP port').env('PORT').argParser(Number).default(3005))
    .addOption(new Option('--host <host>', 'the interface to listen on').env('HOST').default('127.0.0.1'))
    .action(async (options: DashboardOptions) => {
      if (!Number.isInteger(options.port) || options.port < 0 || options.port > 65_535)
        throw new InputError(`--port: not a port: ${options.port}`);
      try {
        new URL(options.api);
      } catch {
        throw new InputError(`--api: not a URL: ${options.api}`);
      }
      const app = express();
      app.disable('x-powered-by');
      const registry = new Registry();
      collectProcessMetrics(registry);
      app.get('/health/live', (_request, response) => {
        response.json({ status: 'ok', service: 'dashboard' });
      });
      // Ready when the API it shows answers.
      app.get('/health/ready', async (_request, response) => {
        const live = `${options.api.replace(/\/+$/, '')}/health/live`;
        const answer = await fetch(live, { signal: AbortSignal.timeout(3_000) }).then(
          (reply) => reply.ok,
          () => false,
        );
        response
          .status(answer ? 200 : 503)
          .json(answer ? { status: 'ok' } : { status: 'error', reason: `${live} does not answer` });
      });
      app.get('/metrics', async (_request, response) => {
        response.type('text/plain; version=0.0.4').send(await registry.metrics());
      });
      app.use(apiProxy(options.api));
      app.use(dashboardFiles());
      const server = createServer(app);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(options.port, options.host, resolve);
      });
      writeLine(
        streams.stdout,
        `the dashboard of ${options.api} is on http://${options.host}:${options.port}/`,
      );
      await new Promise<void>((resolve) => {
        for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => resolve());
      });
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      exitWith(EXIT_OK);
    });
};
