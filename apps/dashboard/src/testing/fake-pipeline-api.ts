import type { Server, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import type {
  Failure,
  FailurePage,
  LagReport,
  NodeStatus,
  PipelineSnapshot,
  PipelineStatus,
  StageLag,
} from '../api/contract';

/**
 * A stand-in for the config service's pipeline APIs, for the dashboard's browser test only: the
 * same paths and shapes (../api/contract.ts), made-up figures. Every snapshot has more relay
 * samples than the one before, and the failures appear `failuresAfterMs` after the start.
 */
export interface FakePipelineApiOptions {
  /** The built dashboard (dist/dashboard), served under `mountPath`. */
  staticDir: string;
  mountPath: string;
  snapshotIntervalMs: number;
  failuresAfterMs: number;
}

export interface FakePipelineApi {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** Every request's method, path and Authorization header, in order. */
  readonly requests: { method: string; path: string; authorization: string | undefined }[];
  close(): Promise<void>;
}

export const FAKE_FAILURES: readonly Failure[] = [
  {
    nodeId: 'web-0042',
    code: 'property-cycle',
    message: 'the property "app.url" refers to itself through "app.base" → "app.url"',
    directiveIds: ['dir-apache-vhosts'],
    ruleIds: ['rule-web'],
    sinceRevision: 105,
    since: '2026-01-15T10:00:05.000Z',
  },
  {
    nodeId: 'db-0007',
    code: 'unknown-technique',
    message: 'directive "dir-pg-tuning" uses technique "pg_tuning" version 3, which does not exist',
    directiveIds: ['dir-pg-tuning'],
    ruleIds: ['rule-db', 'rule-base'],
    sinceRevision: 106,
    since: '2026-01-15T10:00:06.000Z',
  },
];

function stage(stageName: StageLag['stage'], count: number, p50: number): StageLag {
  return count === 0
    ? { stage: stageName, count, p50: null, p95: null, p99: null, max: null }
    : { stage: stageName, count, p50, p95: p50 * 1.8, p99: p50 * 2.6, max: p50 * 3.1 };
}

export async function startFakePipelineApi(options: FakePipelineApiOptions): Promise<FakePipelineApi> {
  const started = Date.now();
  const requests: FakePipelineApi['requests'] = [];
  const streams = new Set<ServerResponse>();
  const failing = (): readonly Failure[] =>
    Date.now() - started >= options.failuresAfterMs ? FAKE_FAILURES : [];
  let tick = 0;

  const lag = (): LagReport => {
    const wave = 40 * Math.sin(tick / 3);
    return {
      windowSeconds: 60,
      steady: [
        stage('generated', 40 + 9 * tick, 35 + wave / 4),
        stage('distributed', 40 + 9 * tick, 70 + wave / 2),
        stage('relay', 25 + 7 * tick, 140 + wave),
        stage('fetched', 10 + 3 * tick, 900 + wave),
      ],
      catchUp: [
        stage('generated', 0, 0),
        stage('distributed', 0, 0),
        stage('relay', 1200, 8_400),
        stage('fetched', 0, 0),
      ],
    };
  };

  const status = (): PipelineStatus => {
    const failures = failing();
    const failuresByCode: Record<string, number> = {};
    for (const failure of failures) failuresByCode[failure.code] = (failuresByCode[failure.code] ?? 0) + 1;
    const committed = 100 + tick;
    return {
      revisions: { committed, generated: committed, distributed: committed - 1 },
      failingNodes: failures.length,
      failuresByCode,
      throughput: {
        changesPerSecond: 18 + 4 * Math.sin(tick / 2),
        nodesGeneratedPerSecond: 1_900 + 300 * Math.sin(tick / 4),
        bundlesDeliveredPerSecond: 1_850 + 280 * Math.sin(tick / 4 - 0.5),
      },
      relays: [
        {
          relayId: 'relay-eu',
          parentId: null,
          revision: committed - 1,
          behind: 0,
          confirmedAt: new Date().toISOString(),
          nodes: 6_000,
        },
        {
          relayId: 'relay-eu-paris',
          parentId: 'relay-eu',
          revision: committed - 3,
          behind: 2,
          confirmedAt: new Date(Date.now() - 4_000).toISOString(),
          nodes: 2_500,
        },
        {
          relayId: 'relay-us',
          parentId: null,
          revision: committed - 1,
          behind: 0,
          confirmedAt: new Date().toISOString(),
          nodes: 4_000,
        },
        { relayId: 'relay-lab', parentId: null, revision: 0, behind: committed, confirmedAt: null, nodes: 0 },
      ],
      consumers: [
        {
          group: 'policygen-generator',
          topic: 'policygen.generation.requests.v1',
          lag: 12,
          partitions: [
            { partition: 0, lag: 5 },
            { partition: 1, lag: 7 },
            { partition: 2, lag: 0 },
          ],
        },
        {
          group: 'policygen-distribution',
          topic: 'policygen.node-bundles.v1',
          lag: 0,
          partitions: [{ partition: 0, lag: 0 }],
        },
      ],
      generators: [
        { memberId: 'generator-1-3f2a9c', clientId: 'generator-1', partitions: [0, 1] },
        { memberId: 'generator-2-81be04', clientId: 'generator-2', partitions: [2] },
      ],
      ready: true,
      reasons: [],
    };
  };

  const snapshot = (): PipelineSnapshot => ({ at: new Date().toISOString(), status: status(), lag: lag() });

  const app = express();
  app.use((request, _response, next) => {
    requests.push({
      method: request.method,
      path: request.path,
      authorization: request.headers.authorization,
    });
    next();
  });
  app.use(options.mountPath, express.static(options.staticDir));
  app.get('/api/v1/pipeline/status', (_request, response) => {
    response.json(status());
  });
  app.get('/api/v1/pipeline/lag', (_request, response) => {
    response.json(lag());
  });
  app.get('/api/v1/pipeline/stream', (request, response) => {
    response.writeHead(200, {
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-cache',
      Connection: 'keep-alive',
    });
    response.write('retry: 1000\n\n');
    response.write(`event: snapshot\ndata: ${JSON.stringify(snapshot())}\n\n`);
    streams.add(response);
    request.on('close', () => streams.delete(response));
  });
  app.get('/api/v1/failures', (request, response) => {
    const query = (name: string): string =>
      typeof request.query[name] === 'string' ? (request.query[name] as string) : '';
    const limit = Number(query('limit') || 50);
    const matching = failing().filter(
      (failure) =>
        (query('code') === '' || failure.code === query('code')) &&
        (query('directive') === '' || failure.directiveIds.includes(query('directive'))) &&
        (query('rule') === '' || failure.ruleIds.includes(query('rule'))),
    );
    const page: FailurePage = { total: matching.length, items: matching.slice(0, limit), next: null };
    response.json(page);
  });
  app.get('/api/v1/nodes/:id/status', (request, response) => {
    const { id } = request.params;
    const failure = failing().find((candidate) => candidate.nodeId === id);
    const revision = 100 + tick;
    const body: NodeStatus = {
      nodeId: id,
      revision,
      generation: {
        revision: failure ? failure.sinceRevision : revision,
        outcome: failure ? 'failed' : 'generated',
        hash: failure ? null : 'sha256:4be1c0ffee',
        at: new Date().toISOString(),
        lastGoodRevision: failure ? failure.sinceRevision - 1 : revision,
      },
      failure: failure
        ? {
            code: failure.code,
            message: failure.message,
            directiveIds: failure.directiveIds,
            ruleIds: failure.ruleIds,
            sinceRevision: failure.sinceRevision,
            since: failure.since,
          }
        : null,
      relays: [
        { relayId: 'relay-eu', revision: 104, hash: 'sha256:0ld0ne', confirmedAt: new Date().toISOString() },
      ],
      fetched: {
        relayId: 'relay-eu',
        revision: 104,
        hash: 'sha256:0ld0ne',
        fetchedAt: new Date().toISOString(),
      },
    };
    response.json(body);
  });
  app.get('/api/v1/nodes/:id/explain', (request, response) => {
    response.json({
      nodeId: request.params.id,
      groups: ['all-nodes', 'web-servers'],
      rules: [
        {
          ruleId: 'rule-web',
          directives: [{ directiveId: 'dir-apache-vhosts', technique: 'apache_vhosts' }],
        },
      ],
      properties: { 'app.url': { value: '${app.base}/x', from: 'group:web-servers' } },
    });
  });

  const timer = setInterval(() => {
    tick += 1;
    const event = `event: snapshot\ndata: ${JSON.stringify(snapshot())}\n\n`;
    for (const stream of streams) stream.write(event);
  }, options.snapshotIntervalMs);

  const server: Server = createServer(app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: async () => {
      clearInterval(timer);
      for (const stream of streams) stream.end();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
