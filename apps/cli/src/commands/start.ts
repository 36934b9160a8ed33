import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Option } from 'commander';
import pino from 'pino';
import { buildDemoFleet } from '@policygen/fleets';
import { EXIT_OK, InputError } from '../errors';
import { printFlow } from '../embedded/flow-printer';
import type { EmbeddedPipeline } from '../embedded/embedded-pipeline';
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

/** `POLICYGEN_ADMIN_TOKEN` or the file `POLICYGEN_ADMIN_TOKEN_FILE` names, if either is set. */
async function environmentAdminToken(): Promise<string | null> {
  const direct = process.env['POLICYGEN_ADMIN_TOKEN'];
  const file = process.env['POLICYGEN_ADMIN_TOKEN_FILE'];
  if (direct && file)
    throw new InputError(
      'POLICYGEN_ADMIN_TOKEN: set both directly and by POLICYGEN_ADMIN_TOKEN_FILE; keep one',
    );
  const token = direct ?? (file ? (await readFile(file, 'utf8')).replace(/\r?\n$/, '') : null);
  if (token !== null && token.length < 16)
    throw new InputError('POLICYGEN_ADMIN_TOKEN: at least 16 characters');
  return token;
}

/**
 * A reader's API token: the one kept from an earlier run while it still holds (the dashboard's
 * address printed then keeps working), else a new one, kept.
 */
async function readerToken(pipeline: EmbeddedPipeline, name: string): Promise<string> {
  const kept = pipeline.secrets.secrets.dashboardToken;
  if (kept !== undefined) {
    const whoami = await fetch(`${pipeline.url}/api/v1/whoami`, {
      headers: { authorization: `Bearer ${kept}` },
    });
    if (whoami.ok) return kept;
  }
  const created = await fetch(`${pipeline.url}/api/v1/api-tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${pipeline.adminToken}` },
    // A name once used may still be held (by a token kept nowhere: a crash came first): a new one is taken.
    body: JSON.stringify({
      name: kept === undefined && pipeline.resumedAt === 0 ? name : `${name}-${Date.now()}`,
      role: 'reader',
      expiresInDays: 30,
    }),
  });
  if (!created.ok) throw new Error(`the ${name}'s API token was refused: ${await created.text()}`);
  const { token } = (await created.json()) as { token: string };
  await pipeline.secrets.update({ dashboardToken: token });
  return token;
}

export const defineStart: CommandDefinition = (program, { streams, exitWith }) => {
  program
    .command('start')
    .description(
      'run the whole pipeline in this process (config API, generator, distribution, one relay) on an in-process bus, seeded with the demo fleet; in memory, or kept under --data and resumed from it',
    )
    .addOption(new Option('-p, --port <port>', 'the HTTP port').argParser(port).env('PORT').default(3000))
    .addOption(new Option('--host <host>', 'the interface to listen on').env('HOST').default('127.0.0.1'))
    .option(
      '--data <dir>',
      "keep everything here (configuration, API tokens, secrets, the distribution's and the relay's files) and resume from it at the next start (default: a temporary directory, removed at exit)",
    )
    .addOption(
      new Option('--ready-timeout <ms>', 'how long the first generation may take')
        .argParser(Number)
        .default(120_000),
    )
    .action(async (options: StartOptions) => {
      const temporary = options.data === undefined;
      const dataDir = options.data ?? (await mkdtemp(join(tmpdir(), 'policygen-start-')));
      const logger = pino({ level: process.env['LOG_LEVEL'] ?? 'warn' }, pino.destination(2));
      const adminToken = await environmentAdminToken();
      const pipeline = await startEmbeddedPipeline({
        host: options.host,
        port: options.port,
        dataDir,
        persistent: !temporary,
        logger,
        ...(adminToken === null ? {} : { adminToken }),
      });
      const asAdmin = { authorization: `Bearer ${pipeline.adminToken}` };
      const say = (line: string): void => writeLine(streams.stdout, line);
      const watcher = await printFlow(pipeline.messaging, say, {
        colour: process.stdout.isTTY === true && !process.env['NO_COLOR'],
      });
      const { url } = pipeline;

      const { resumedAt } = pipeline;
      let revision = resumedAt;
      if (resumedAt === 0) {
        const imported = await fetch(`${url}/api/v1/import`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...asAdmin },
          body: JSON.stringify(buildDemoFleet()),
        });
        if (!imported.ok) throw new Error(`the demo fleet was refused: ${await imported.text()}`);
        ({ revision } = (await imported.json()) as { revision: number });
      }
      await eventually(() => settled(pipeline, revision), options.readyTimeout, 'the first generation');
      const nodeCount = (await pipeline.store.snapshot()).fleet.nodes.length;

      const node = (await (
        await fetch(`${url}/api/v1/nodes/${EXAMPLE_NODE}`, { headers: asAdmin })
      ).json()) as Record<string, unknown>;
      const { token, expiresAt } = (await (
        await fetch(`${url}/api/v1/nodes/${EXAMPLE_NODE}/token`, { method: 'POST', headers: asAdmin })
      ).json()) as { token: string; expiresAt?: string };
      const dashboardToken = await readerToken(pipeline, 'dashboard');
      const changed = {
        ...node,
        properties: { ...(node['properties'] as object), motd: 'Hello from policygen start' },
      };
      const relayUrl = `${url}${MOUNTS.relay}`;
      say(
        [
          '',
          `Policygen is running on ${url}: the config API, the generator and the distribution-service`,
          temporary
            ? `(relay "root" too) in this one process, on an in-process event bus and in-memory stores.`
            : `(relay "root" too) in this one process, on an in-process event bus, keeping everything in ${dataDir}.`,
          resumedAt === 0
            ? `The demo fleet is loaded (${nodeCount} nodes); relay "root" serves ${pipeline.distribution.distributor.status().served} of them.`
            : `Resumed from ${dataDir} at revision ${resumedAt} (${nodeCount} nodes); relay "root" serves ${pipeline.distribution.distributor.status().served} of them.`,
          '',
          `API token: ${pipeline.adminToken}`,
          `  the admin's (POLICYGEN_ADMIN_TOKEN sets it); every call but /health/*, /status and /metrics needs one`,
          `Node token: ${token}`,
          `  node ${EXAMPLE_NODE}'s, for its relay; expires ${expiresAt ?? 'never'}`,
          ...(temporary
            ? []
            : [`  both, and the tokens issued before, hold after a restart with --data ${dataDir}`]),
          '',
          `  API_TOKEN=${pipeline.adminToken}`,
          `  NODE_TOKEN=${token}`,
          '',
          `  config API    ${url}/api/v1/nodes   (OpenAPI: ${url}/api/docs)`,
          `  pipeline      ${url}/api/v1/pipeline/status   ${url}/api/v1/pipeline/lag   ${url}/api/v1/failures`,
          `  a node        ${url}/api/v1/nodes/${EXAMPLE_NODE}/status`,
          `  readiness     ${url}/health/ready (every service)   liveness ${url}/health/live`,
          `  metrics       ${url}/metrics  ${url}${MOUNTS.generator}/metrics  ${url}${MOUNTS.distribution}/metrics  ${relayUrl}/metrics`,
          `  dashboard     ${url}/?token=${dashboardToken}   (a reader's token)`,
          `  on the CLI    POLICYGEN_TOKEN=$API_TOKEN npx policygen status --url ${url}    (lag --watch, diff, ...)`,
          `  events        ${url}/events/<topic>   (server-sent events, resumable; a consumer: POLICYGEN_URL=${url} POLICYGEN_TOKEN=$API_TOKEN with @policygen/sdk)`,
          `  more tokens   curl -s -X POST ${url}/api/v1/api-tokens -H "Authorization: Bearer $API_TOKEN" -H 'content-type: application/json' -d '{"name":"ci","role":"editor"}'`,
          '',
          `  curl -s -H "Authorization: Bearer $API_TOKEN" ${url}/api/v1/nodes/${EXAMPLE_NODE}`,
          '',
          `A node fetches its policies from its relay, with its token (POST /api/v1/nodes/<id>/token, as an admin):`,
          `  curl -s -H "Authorization: Bearer $NODE_TOKEN" ${relayUrl}/nodes/${EXAMPLE_NODE}/policies | tar -tv`,
          `  curl -s -H "Authorization: Bearer $NODE_TOKEN" ${relayUrl}/nodes/${EXAMPLE_NODE}/policies -H 'accept: application/json'`,
          '',
          'Change something and watch it flow through the pipeline (the lines that follow):',
          `  curl -s -X PUT ${url}/api/v1/nodes/${EXAMPLE_NODE} -H "Authorization: Bearer $API_TOKEN" -H 'content-type: application/json' \\`,
          `    -H 'X-Policygen-Reason: trying policygen' -d '${JSON.stringify(changed)}'`,
          `  curl -s -H "Authorization: Bearer $NODE_TOKEN" ${relayUrl}/nodes/${EXAMPLE_NODE}/policies | tar -xO rules/cfengine-community/properties.d/properties.json`,
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
