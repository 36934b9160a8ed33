import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Option } from 'commander';
import pino from 'pino';
import { buildDemoFleet } from '@policygen/fleets';
import { EXIT_OK } from '../errors';
import { printFlow } from '../embedded/flow-printer';
import { MOUNTS, settled, startEmbeddedPipeline } from '../embedded/embedded-pipeline';
import { writeLine } from '../io/streams';
import type { CommandDefinition } from './context';

interface StartOptions {
  readonly port: number;
  readonly host: string;
  readonly data?: string;
  readonly readyTimeout: number;
}

const EXAMPLE_NODE = 'web-par-001';

function port(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0 || parsed > 65_535) throw new Error(`not a port: ${value}`);
  return parsed;
}

async function eventually(condition: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const giveUpAt = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > giveUpAt) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Every node of the imported revision generated, in the root feed, and on the relay. */

export const defineStart: CommandDefinition = (program, { streams, exitWith }) => {
  program
    .command('start')
    .description(
      'run the whole pipeline in this process (config API, generator, distribution, one relay) on an in-process bus and in-memory stores, seeded with the demo fleet',
    )
    .addOption(new Option('-p, --port <port>', 'the HTTP port').argParser(port).env('PORT').default(3000))
    .addOption(new Option('--host <host>', 'the interface to listen on').env('HOST').default('127.0.0.1'))
    .option('--data <dir>', "the distribution's and the relay's files (default: a temporary directory)")
    .addOption(
      new Option('--ready-timeout <ms>', 'how long the first generation may take')
        .argParser(Number)
        .default(120_000),
    )
    .action(async (options: StartOptions) => {
      const temporary = options.data === undefined;
      const dataDir = options.data ?? (await mkdtemp(join(tmpdir(), 'policygen-start-')));
      const logger = pino({ level: process.env['LOG_LEVEL'] ?? 'warn' }, pino.destination(2));
      const pipeline = await startEmbeddedPipeline({
        host: options.host,
        port: options.port,
        dataDir,
        logger,
      });
      const say = (line: string): void => writeLine(streams.stdout, line);
      const watcher = await printFlow(pipeline.messaging, say, {
        colour: process.stdout.isTTY === true && !process.env['NO_COLOR'],
      });
      const { url } = pipeline;

      const fleet = buildDemoFleet() as { readonly nodes: readonly unknown[] };
      const imported = await fetch(`${url}/api/v1/import`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(fleet),
      });
      if (!imported.ok) throw new Error(`the demo fleet was refused: ${await imported.text()}`);
      const { revision } = (await imported.json()) as { revision: number };
      await eventually(() => settled(pipeline, revision), options.readyTimeout, 'the first generation');

      const node = (await (await fetch(`${url}/api/v1/nodes/${EXAMPLE_NODE}`)).json()) as Record<
        string,
        unknown
      >;
      const { token } = (await (
        await fetch(`${url}/api/v1/nodes/${EXAMPLE_NODE}/token`, { method: 'POST' })
      ).json()) as { token: string };
      const changed = {
        ...node,
        properties: { ...(node['properties'] as object), motd: 'Hello from policygen start' },
      };
      const relayUrl = `${url}${MOUNTS.relay}`;
      say(
        [
          '',
          `Policygen is running on ${url}: the config API, the generator, the distribution-service and`,
          `relay "root" in this one process, on an in-process event bus and in-memory stores.`,
          `The demo fleet is loaded (${fleet.nodes.length} nodes); relay "root" serves ${pipeline.relay.follower.status().nodes} of them.`,
          '',
          `  config API    ${url}/api/v1/nodes   (OpenAPI: ${url}/api/docs)`,
          `  pipeline      ${url}/api/v1/pipeline/status   ${url}/api/v1/pipeline/lag   ${url}/api/v1/failures`,
          `  a node        ${url}/api/v1/nodes/${EXAMPLE_NODE}/status`,
          `  readiness     ${url}/health/ready (every service)   liveness ${url}/health/live`,
          `  metrics       ${url}/metrics  ${url}${MOUNTS.generator}/metrics  ${url}${MOUNTS.distribution}/metrics  ${relayUrl}/metrics`,
          `  on the CLI    npx policygen status --url ${url}    npx policygen lag --url ${url} --watch`,
          `  events        ${url}/events/<topic>   (server-sent events, resumable; a consumer: POLICYGEN_URL=${url} with @policygen/sdk)`,
          '',
          `A node fetches its policies from its relay, with its token (POST /api/v1/nodes/<id>/token):`,
          `  TOKEN=${token}`,
          `  curl -s -H "Authorization: Bearer $TOKEN" ${relayUrl}/nodes/${EXAMPLE_NODE}/policies | tar -tv`,
          `  curl -s -H "Authorization: Bearer $TOKEN" ${relayUrl}/nodes/${EXAMPLE_NODE}/policies -H 'accept: application/json'`,
          '',
          'Change something and watch it flow through the pipeline (the lines that follow):',
          `  curl -s -X PUT ${url}/api/v1/nodes/${EXAMPLE_NODE} -H 'content-type: application/json' \\`,
          `    -d '${JSON.stringify(changed)}'`,
          `  curl -s -H "Authorization: Bearer $TOKEN" ${relayUrl}/nodes/${EXAMPLE_NODE}/policies | tar -xO rules/cfengine-community/properties.d/properties.json`,
          '',
          'Ctrl-C stops everything.',
          '',
        ].join('\n'),
      );

      // `npm start` passes the signal on, so it may come twice: the first one stops, the others wait for it.
      let stopRequested: () => void = () => undefined;
      const stopping = new Promise<void>((resolve) => {
        stopRequested = resolve;
      });
      const onSignal = (): void => stopRequested();
      for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, onSignal);
      await stopping;
      say('stopping');
      await watcher.close();
      await pipeline.stop();
      if (temporary) await rm(dataDir, { recursive: true, force: true });
      exitWith(EXIT_OK);
    });
};
