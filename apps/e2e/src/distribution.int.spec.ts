import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join, relative } from 'node:path';
import { extract } from 'tar-stream';
import { buildDemoFleet } from '@policygen/fleets';
import { spawnSync } from 'node:child_process';
import { ConfigResourceTypes, Kafka, logLevel } from 'kafkajs';
import { NODE_BUNDLES_TOPIC_CONFIG } from '@policygen/events';
import { readLatestBundles } from '@policygen/sdk';
import { isDerivedPath, isPartPath } from '@policygen/distribution';
import {
  eventually,
  getTestInfrastructure,
  parsePrometheusText,
  promtoolProblems,
  workspaceRoot,
} from '@policygen/testing-infra';
import type { Entity, ServiceProcess } from './testing/pipeline';
import { generateTreesWithCli, Pipeline } from './testing/pipeline';

/**
 * Issue 6's path end to end, on real Postgres, Kafka and Redis, the services run as processes:
 * HTTP → config-service → generator → distribution-service → relay `root` → relay `relay-eu`
 * (a relay below a relay) → the node, which fetches its tree with its own token.
 */

const PROMISES_GENERATED = 'rules/cfengine-community/rudder-promises-generated';

/** The API token the command line presents (POLICYGEN_TOKEN): the pipeline's admin's, once it runs. */
let cliToken = '';

/** The policygen command line, as ops run it against the pipeline. */
function policygen(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(
    process.execPath,
    [join(workspaceRoot(), 'dist', 'cli', 'policygen.js'), ...args],
    {
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, POLICYGEN_TOKEN: cliToken },
    },
  );
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

interface Fetched {
  readonly status: number;
  readonly etag: string | null;
  readonly files: Map<string, Buffer>;
}

/** `GET /nodes/{id}/policies` as a node does it, the tar stream unpacked. */
async function fetchPolicies(
  relay: ServiceProcess,
  nodeId: string,
  token: string | null,
  etag?: string,
): Promise<Fetched> {
  const headers: Record<string, string> = {};
  if (token !== null) headers['authorization'] = `Bearer ${token}`;
  if (etag) headers['if-none-match'] = etag;
  const response = await fetch(`${relay.url}/nodes/${encodeURIComponent(nodeId)}/policies`, { headers });
  const files = new Map<string, Buffer>();
  const body = Buffer.from(await response.arrayBuffer());
  if (response.status === 200) {
    const unpack = extract();
    const done = new Promise<void>((resolve, reject) => {
      unpack.on('entry', (header, stream, next) => {
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: unknown) => chunks.push(chunk as Buffer));
        stream.on('end', () => {
          files.set(header.name, Buffer.concat(chunks));
          next();
        });
      });
      unpack.on('finish', resolve);
      unpack.on('error', reject);
    });
    unpack.end(body);
    await done;
  }
  return { status: response.status, etag: response.headers.get('etag'), files };
}

/** Every file of a node's tree as `policygen generate` wrote it. */
function cliTree(out: string, nodeId: string): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  const walk = (directory: string): void => {
    for (const name of readdirSync(directory)) {
      const path = join(directory, name);
      if (statSync(path).isDirectory()) walk(path);
      else files.set(relative(join(out, nodeId), path).split('\\').join('/'), readFileSync(path));
    }
  };
  walk(join(out, nodeId));
  return files;
}

/**
 * The served tree equals the CLI's byte for byte. With `stampFree`, the reference was generated at
 * another time: the time file, and its digest in the manifest, are then compared as "a time".
 */
function expectSameTree(
  served: Map<string, Buffer>,
  reference: Map<string, Buffer>,
  nodeId: string,
  stampFree = false,
): void {
  expect({ nodeId, paths: [...served.keys()].sort() }).toEqual({
    nodeId,
    paths: [...reference.keys()].sort(),
  });
  const stamp = served.get(PROMISES_GENERATED) ?? Buffer.alloc(0);
  expect(stamp.toString()).toMatch(/^\d{13}\n?$/);
  const withoutStamp = (manifest: Buffer | undefined, time: Buffer | undefined): string =>
    (manifest ?? Buffer.alloc(0)).toString('utf8').replace(sha256(time ?? Buffer.alloc(0)), '<stamp digest>');
  for (const [path, content] of reference) {
    if (stampFree && path === PROMISES_GENERATED) continue;
    const compared = (file: Buffer | undefined, time: Buffer | undefined): string =>
      stampFree && path === 'policy-manifest.json'
        ? withoutStamp(file, time)
        : (file ?? Buffer.alloc(0)).toString('utf8');
    expect({ nodeId, path, content: compared(served.get(path), stamp) }).toEqual({
      nodeId,
      path,
      content: compared(content, reference.get(PROMISES_GENERATED)),
    });
  }
}

function sha256(content: Buffer): string {
  return createHash('sha256').update(content).digest('hex');
}

async function health<T>(service: ServiceProcess): Promise<T> {
  return (await (await fetch(`${service.url}/status`)).json()) as T;
}

/** The blobs of every bundle a relay serves to the given nodes, from their listings. */
async function blobsServed(
  relay: ServiceProcess,
  nodeIds: readonly string[],
  token: (nodeId: string) => Promise<string>,
): Promise<Set<string>> {
  const digests = new Set<string>();
  for (const nodeId of nodeIds) {
    const response = await fetch(`${relay.url}/nodes/${encodeURIComponent(nodeId)}/policies`, {
      headers: { authorization: `Bearer ${await token(nodeId)}`, accept: 'application/json' },
    });
    const listing = (await response.json()) as { files: { sha256: string }[] };
    for (const file of listing.files) digests.add(file.sha256);
  }
  return digests;
}

describe('distribution: from a config change to the node, through two levels of relays', () => {
  const pipeline = new Pipeline();
  cliToken = pipeline.adminToken;
  let distribution: ServiceProcess;
  let root: ServiceProcess;
  let relayEu: ServiceProcess;
  let euNodes: string[] = [];
  let rootNodes: string[] = [];
  const tokens = new Map<string, string>();

  const token = async (nodeId: string): Promise<string> => {
    const known = tokens.get(nodeId) ?? (await pipeline.nodeToken(nodeId));
    tokens.set(nodeId, known);
    return known;
  };
  const confirmedOn = (relayId: string, nodeId: string, revision: number) =>
    pipeline.events.confirmations.find(
      (event) => event.relayId === relayId && event.nodeId === nodeId && event.revision === revision,
    );
  const changeProperty = async (nodeId: string, properties: Record<string, unknown>): Promise<number> => {
    const node = (await pipeline.request('GET', `/api/v1/nodes/${nodeId}`)).body as Entity;
    const changed = await pipeline.request('PUT', `/api/v1/nodes/${nodeId}`, {
      ...node,
      properties: { ...(node['properties'] as object), ...properties },
    });
    expect(changed.status).toBe(200);
    return pipeline.revision();
  };

  beforeAll(async () => {
    await pipeline.start();
    await pipeline.startGenerator();
    distribution = await pipeline.startDistribution();
    root = await pipeline.startRelay('root', distribution.url);
    relayEu = await pipeline.startRelay('relay-eu', root.url);
    const imported = await pipeline.request('POST', '/api/v1/import', buildDemoFleet());
    if (imported.status !== 200) throw new Error(`the import answered ${imported.status}`);
    const fleet = (await pipeline.exportFleet()) as {
      nodes: { id: string; policyServer?: string; state?: string }[];
    };
    const servedBy = (relayId: string): string[] =>
      fleet.nodes
        .filter(
          (node) => (node.policyServer ?? 'root') === relayId && (node.state ?? 'enabled') !== 'ignored',
        )
        .map((node) => node.id)
        .sort();
    euNodes = servedBy('relay-eu');
    rootNodes = servedBy('root');
    const revision = await pipeline.revision();
    await eventually(() => euNodes.every((nodeId) => confirmedOn('relay-eu', nodeId, revision)), {
      what: `relay-eu confirming its ${euNodes.length} nodes at revision ${revision}`,
      timeoutMs: 90_000,
    });
  }, 180_000);
  afterAll(async () => {
    await pipeline.stop();
  }, 60_000);

  it('serves every node below relay-eu the tree `policygen generate` writes, byte for byte', async () => {
    expect(euNodes.length).toBeGreaterThan(100);
    // Each node was generated at its own millisecond: compared but for the time (the next test does it exactly).
    const reference = generateTreesWithCli(await pipeline.exportFleet(), {
      revision: await pipeline.revision(),
    });
    for (const nodeId of euNodes) {
      const fetched = await fetchPolicies(relayEu, nodeId, await token(nodeId));
      expect({ nodeId, status: fetched.status }).toEqual({ nodeId, status: 200 });
      expectSameTree(fetched.files, cliTree(reference, nodeId), nodeId, true);
    }
    expect(pipeline.events.schemaErrors).toEqual([]);
  });

  it('serves every node from distribution-service itself, relay root, as the relays do: the CLI tree, own bundle only', async () => {
    expect(rootNodes.length).toBeGreaterThan(0);
    const revision = await pipeline.revision();
    const reference = generateTreesWithCli(await pipeline.exportFleet(), { revision });
    // Root's own nodes, and one below relay-eu: the root server serves the whole tree.
    for (const nodeId of [...rootNodes.slice(0, 20), euNodes[0] ?? '']) {
      const fetched = await fetchPolicies(distribution, nodeId, await token(nodeId));
      expect({ nodeId, status: fetched.status }).toEqual({ nodeId, status: 200 });
      expectSameTree(fetched.files, cliTree(reference, nodeId), nodeId, true);
      const fromRelay = await fetchPolicies(root, nodeId, await token(nodeId));
      expect({ nodeId, etag: fetched.etag }).toEqual({ nodeId, etag: fromRelay.etag });
      expect(
        (await fetchPolicies(distribution, nodeId, await token(nodeId), fetched.etag ?? '')).status,
      ).toBe(304);
    }
    // Confirmed on root (distribution-service confirms an entry once it is on its disk; without a
    // relay process named root, the pipeline benchmark waits on those alone).
    for (const nodeId of rootNodes.slice(0, 20))
      expect({ nodeId, confirmed: confirmedOn('root', nodeId, revision) !== undefined }).toEqual({
        nodeId,
        confirmed: true,
      });
    const [mine, other] = rootNodes;
    if (!mine || !other) throw new Error('the demo fleet has nodes on root');
    expect((await fetchPolicies(distribution, other, await token(mine))).status).toBe(403);
    expect((await fetchPolicies(distribution, mine, null)).status).toBe(401);
    expect((await fetchPolicies(distribution, mine, `${mine}.not-the-mac`)).status).toBe(401);
  });

  it('carries a change over HTTP to the node through both relays, and prints the lag of each stage', async () => {
    const nodeId = euNodes[0] ?? '';
    const before = await fetchPolicies(relayEu, nodeId, await token(nodeId));
    const revision = await changeProperty(nodeId, { e2e_marker: 'lag-probe' });

    let servedAt = 0;
    let served: Fetched | undefined;
    await eventually(
      async () => {
        const fetched = await fetchPolicies(relayEu, nodeId, await token(nodeId), before.etag ?? undefined);
        if (fetched.status !== 200) return false;
        servedAt = Date.now();
        served = fetched;
        return true;
      },
      { what: `relay-eu serving ${nodeId}'s new bundle`, timeoutMs: 30_000, intervalMs: 5 },
    );
    await eventually(() => confirmedOn('relay-eu', nodeId, revision) !== undefined, {
      what: `relay-eu's confirmation of ${nodeId} at revision ${revision}`,
    });
    const confirmation = confirmedOn('relay-eu', nodeId, revision);
    if (!confirmation || !served) throw new Error('unreachable');
    const committed = Date.parse(confirmation.committedAt);
    const stages = {
      'commit → generated': Date.parse(confirmation.generatedAt) - committed,
      'commit → distributed (root feed)': Date.parse(confirmation.distributedAt) - committed,
      'commit → on relay-eu (2nd level)': Date.parse(confirmation.confirmedAt) - committed,
      'commit → served to the node': servedAt - committed,
    };
    console.log(
      `lag per stage for ${nodeId} at revision ${revision} (ms):\n` +
        Object.entries(stages)
          .map(([stage, ms]) => `  ${stage.padEnd(36)} ${ms}`)
          .join('\n'),
    );
    expect(Object.values(stages).every((ms) => ms >= 0)).toBe(true);
    expect(stages['commit → served to the node']).toBeGreaterThanOrEqual(stages['commit → generated']);

    const reference = generateTreesWithCli(await pipeline.exportFleet(), {
      revision,
      generatedAt: Number(served.files.get(PROMISES_GENERATED)?.toString().trim()),
      nodes: [nodeId],
    });
    expectSameTree(served.files, cliTree(reference, nodeId), nodeId);
    expect(served.files.get('rules/cfengine-community/properties.d/properties.json')?.toString()).toContain(
      'lag-probe',
    );
    // Unchanged since: 304 for the new ETag, which is the bundle hash.
    expect(served.etag).toBe(`"${confirmation.hash}"`);
    expect((await fetchPolicies(relayEu, nodeId, await token(nodeId), served.etag ?? '')).status).toBe(304);
    const generated = await fetch(`${relayEu.url}/nodes/${nodeId}/rudder-promises-generated`, {
      headers: { authorization: `Bearer ${await token(nodeId)}` },
    });
    expect(await generated.text()).toBe(served.files.get(PROMISES_GENERATED)?.toString());
  });

  it('lets a node read only its own bundle: 403 for another node, 401 without a valid token', async () => {
    const [mine, other] = euNodes;
    if (!mine || !other) throw new Error('the demo fleet has nodes under relay-eu');
    const myToken = await token(mine);
    expect((await fetchPolicies(relayEu, other, myToken)).status).toBe(403);
    expect((await fetchPolicies(relayEu, mine, null)).status).toBe(401);
    expect((await fetchPolicies(relayEu, mine, `${mine}.not-the-mac`)).status).toBe(401);
    expect((await fetchPolicies(relayEu, 'no-such-node', 'no-such-node.forged')).status).toBe(401);
    const unknown = await pipeline.request('POST', '/api/v1/nodes/no-such-node/token');
    expect(unknown.status).toBe(404);
    expect((await fetchPolicies(relayEu, mine, myToken)).status).toBe(200);
  });

  it('restarts a relay (SIGKILL) without losing anything or fetching again a blob it has', async () => {
    const etagsBefore = new Map<string, string | null>();
    for (const nodeId of euNodes)
      etagsBefore.set(nodeId, (await fetchPolicies(relayEu, nodeId, await token(nodeId))).etag);
    const blobsBefore = await blobsServed(relayEu, euNodes, token);

    relayEu.process.kill();
    await eventually(() => !relayEu.process.running, { what: 'relay-eu gone' });
    const changed = euNodes[1] ?? '';
    const revision = await changeProperty(changed, { e2e_marker: 'while-relay-eu-was-down' });
    await eventually(() => confirmedOn('root', changed, revision) !== undefined, {
      what: `relay root holding ${changed} at revision ${revision}`,
      timeoutMs: 30_000,
    });

    relayEu = await pipeline.startRelay('relay-eu', root.url);
    await eventually(() => confirmedOn('relay-eu', changed, revision) !== undefined, {
      what: `relay-eu, restarted, holding ${changed} at revision ${revision}`,
      timeoutMs: 30_000,
    });
    const listing = (await (
      await fetch(`${relayEu.url}/nodes/${changed}/policies`, {
        headers: { authorization: `Bearer ${await token(changed)}`, accept: 'application/json' },
      })
    ).json()) as { files: { path: string; sha256: string }[] };
    // The manifest and the generation time are derived where the node is served (derived-files.ts):
    // what was fetched is the other new files, and the manifest's properties part, new with the property.
    const newBlobs = new Set(
      listing.files
        .filter((file) => !isDerivedPath(file.path))
        .map((file) => file.sha256)
        .filter((sha) => !blobsBefore.has(sha)),
    );
    expect(newBlobs.size).toBeGreaterThan(0);
    const tree = await fetchPolicies(relayEu, changed, await token(changed));
    const manifest = JSON.parse(tree.files.get('policy-manifest.json')?.toString() ?? '{}') as {
      properties: unknown;
    };
    newBlobs.add(sha256(Buffer.from(JSON.stringify(manifest.properties))));
    const status = await health<{ blobFetches: number; cursor: number }>(relayEu);
    expect(status.blobFetches).toBe(newBlobs.size);

    const etagsAfter = new Map<string, string | null>();
    for (const nodeId of euNodes) {
      const fetched = await fetchPolicies(relayEu, nodeId, await token(nodeId));
      expect({ nodeId, status: fetched.status }).toEqual({ nodeId, status: 200 });
      etagsAfter.set(nodeId, fetched.etag);
    }
    expect(etagsAfter.get(changed)).not.toBe(etagsBefore.get(changed));
    expect(etagsAfter).toEqual(new Map([...etagsBefore, [changed, etagsAfter.get(changed) ?? null]]));
  });

  it('removes a node moved to another relay from the old one', async () => {
    const moved = euNodes[2] ?? '';
    const servedBefore = (await health<{ nodes: number }>(relayEu)).nodes;
    const node = (await pipeline.request('GET', `/api/v1/nodes/${moved}`)).body as Entity;
    const put = await pipeline.request('PUT', `/api/v1/nodes/${moved}`, {
      ...node,
      policyServer: 'relay-us',
    });
    expect(put.status).toBe(200);
    const revision = await pipeline.revision();

    // Served from the node's latest entry: once the relay has applied the move, it is gone at once.
    await eventually(async () => (await fetchPolicies(relayEu, moved, await token(moved))).status === 401, {
      what: `relay-eu no longer serving ${moved}`,
      timeoutMs: 30_000,
    });
    expect((await health<{ nodes: number }>(relayEu)).nodes).toBe(servedBefore - 1);
    // The root relay serves the whole tree, relay-us's part included: the node's new bundle is there.
    await eventually(() => confirmedOn('root', moved, revision) !== undefined, {
      what: `relay root holding ${moved} under relay-us at revision ${revision}`,
      timeoutMs: 30_000,
    });
    expect((await fetchPolicies(root, moved, await token(moved))).status).toBe(200);
    for (const nodeId of euNodes.filter((id) => id !== moved).slice(0, 5))
      expect((await fetchPolicies(relayEu, nodeId, await token(nodeId))).status).toBe(200);
  });

  it('reports itself: every service ready and its metrics, the status and lag commands, a failing node and its mending', async () => {
    const distribution = pipeline.distribution as ServiceProcess;
    const services: { readonly name: string; readonly url: string; readonly metrics: string[] }[] = [
      {
        name: 'config-service',
        url: pipeline.configUrl,
        metrics: ['policygen_config_changes_total', 'policygen_config_outbox_backlog'],
      },
      ...pipeline.generators.map((generator) => ({
        name: `generator ${generator.instanceId}`,
        url: generator.url,
        metrics: [
          'policygen_generator_nodes_total',
          'policygen_generator_cache_requests_total',
          'policygen_kafka_consumer_lag',
        ],
      })),
      {
        name: 'distribution-service',
        url: distribution.url,
        metrics: ['policygen_pipeline_lag_seconds', 'policygen_kafka_consumer_lag'],
      },
      ...[root, relayEu].map((relay) => ({
        name: relay.name,
        url: relay.url,
        metrics: ['policygen_relay_feed_entries_behind', 'policygen_relay_revisions_behind'],
      })),
    ];
    for (const service of services) {
      await eventually(async () => (await fetch(`${service.url}/health/ready`)).status === 200, {
        what: `${service.name} to be ready`,
      });
      const text = await (await fetch(`${service.url}/metrics`)).text();
      const families = parsePrometheusText(text);
      for (const name of [...service.metrics, 'policygen_http_request_duration_seconds'])
        expect({ service: service.name, name, present: families.has(name) }).toEqual({
          service: service.name,
          name,
          present: true,
        });
      expect(promtoolProblems(text).filter((problem) => problem.startsWith('policygen_'))).toEqual([]);
    }
    const behind = parsePrometheusText(await (await fetch(`${relayEu.url}/metrics`)).text()).get(
      'policygen_relay_feed_entries_behind',
    );
    expect(behind?.samples).toEqual([{ labels: { relay: 'relay-eu' }, value: 0 }]);

    await eventually(
      () => policygen('status', '--url', pipeline.configUrl, '--settle', '1000').status === 0,
      {
        what: 'policygen status to find the pipeline sound',
      },
    );
    const status = JSON.parse(policygen('status', '--url', pipeline.configUrl, '--json').stdout) as {
      status: { generators: { partitions: number[] }[]; relays: { relayId: string; behind: number }[] };
    };
    expect(
      status.status.generators.flatMap((generator) => generator.partitions).sort((a, b) => a - b),
    ).toEqual([0, 1, 2, 3, 4, 5]);
    expect(status.status.relays.find((relay) => relay.relayId === 'relay-eu')?.behind).toBe(0);
    const lag = JSON.parse(
      policygen('lag', '--url', pipeline.configUrl, '--json', '--window', '600').stdout,
    ) as {
      steady: { stage: string; count: number }[];
      catchUp: { stage: string; count: number }[];
    };
    const counted = (stages: { stage: string; count: number }[]) =>
      stages.find((stage) => stage.stage === 'relay')?.count ?? 0;
    // The import travelled as "left out, read the snapshot": its bundles are a catch-up's.
    expect(counted(lag.catchUp)).toBeGreaterThan(100);
    expect(counted(lag.steady)).toBeGreaterThan(0);

    // A node's fetch ends its change's way: its relay reports it, and its status says so.
    const fetcher = euNodes[1] ?? '';
    expect((await fetchPolicies(relayEu, fetcher, await token(fetcher))).status).toBe(200);
    await eventually(
      async () => {
        const fetched = (
          (await pipeline.request('GET', `/api/v1/nodes/${fetcher}/status`)).body as {
            fetched: { relayId: string; current: boolean } | null;
          }
        ).fetched;
        return fetched?.relayId === 'relay-eu' && fetched.current;
      },
      { what: `${fetcher}'s fetch in its status` },
    );
    expect(
      pipeline.events.fetches.some((event) => event.nodeId === fetcher && event.relayId === 'relay-eu'),
    ).toBe(true);

    // A directive that requires one these nodes do not have: they fail, keep their bundle, and say so.
    const directive = (await pipeline.request('GET', '/api/v1/directives/cron-db-backup')).body as Entity;
    const broken = await pipeline.request('PUT', '/api/v1/directives/cron-db-backup', {
      ...directive,
      require: [...((directive['require'] as string[]) ?? []), 'dir-app'],
    });
    expect(broken.status).toBe(200);
    let failing = '';
    await eventually(
      async () => {
        const page = (await pipeline.request('GET', '/api/v1/failures?code=MISSING_DEPENDENCY')).body as {
          items: { nodeId: string; directiveIds: string[] }[];
        };
        failing = page.items[0]?.nodeId ?? '';
        return failing !== '';
      },
      { what: 'the failing nodes to be listed' },
    );
    const nodeStatus = (await pipeline.request('GET', `/api/v1/nodes/${failing}/status`)).body as {
      failure: { code: string; directiveIds: string[] } | null;
      generation: { lastGoodRevision: number | null };
    };
    expect(nodeStatus.failure).toMatchObject({
      code: 'MISSING_DEPENDENCY',
      directiveIds: expect.arrayContaining(['cron-db-backup']),
    });
    expect(nodeStatus.generation.lastGoodRevision).toBeGreaterThan(0);
    const failingStatus = policygen('status', '--url', pipeline.configUrl, '--settle', '0');
    expect(failingStatus.status).toBe(1);
    expect(failingStatus.stdout).toContain(`${failing}  MISSING_DEPENDENCY`);
    const generatorReady = (await (await fetch(`${pipeline.generators[0]?.url}/health/ready`)).json()) as {
      degraded?: boolean;
    };
    expect(generatorReady.degraded).toBe(true);

    expect((await pipeline.request('PUT', '/api/v1/directives/cron-db-backup', directive)).status).toBe(200);
    await eventually(
      async () => ((await pipeline.request('GET', '/api/v1/failures')).body as { total: number }).total === 0,
      { what: 'the failures to clear' },
    );
    expect(
      ((await pipeline.request('GET', `/api/v1/nodes/${failing}/status`)).body as { failure: unknown })
        .failure,
    ).toBeNull();
    await eventually(
      () => policygen('status', '--url', pipeline.configUrl, '--settle', '1000').status === 0,
      {
        what: 'policygen status to find the pipeline sound again',
      },
    );
  }, 120_000);

  it("keeps every node's current bundle on the compacted topic: a consumer starting after 120 changes rebuilds what relay root serves", async () => {
    const admin = new Kafka({
      brokers: [...getTestInfrastructure().kafkaBrokers],
      logLevel: logLevel.NOTHING,
    }).admin();
    await admin.connect();
    try {
      const [described] = (
        await admin.describeConfigs({
          includeSynonyms: false,
          resources: [{ type: ConfigResourceTypes.TOPIC, name: pipeline.topics.nodeBundles }],
        })
      ).resources;
      const settings = Object.fromEntries(
        (described?.configEntries ?? []).map((entry) => [entry.configName, entry.configValue]),
      );
      expect(settings).toMatchObject(NODE_BUNDLES_TOPIC_CONFIG);
    } finally {
      await admin.disconnect();
    }
    const fleet = (await pipeline.exportFleet()) as { nodes: { id: string; policyServer?: string }[] };
    const servers = new Set(fleet.nodes.map((node) => node.policyServer));
    const leaving =
      fleet.nodes.find((node) => node.policyServer === 'root' && !servers.has(node.id))?.id ?? '';
    const leavingToken = await token(leaving);
    // Changes over 40 nodes before the consumer starts: it reads one record per node (npm start's test makes 1,000).
    const changing = fleet.nodes.filter((node) => node.id !== leaving && !servers.has(node.id)).slice(0, 40);
    const entities = new Map<string, Entity>();
    for (const node of changing)
      entities.set(node.id, (await pipeline.request('GET', `/api/v1/nodes/${node.id}`)).body as Entity);
    for (let change = 0; change < 120; change++) {
      const node = changing[change % changing.length] as { id: string };
      const entity = entities.get(node.id) as Entity;
      const put = await pipeline.request('PUT', `/api/v1/nodes/${node.id}`, {
        ...entity,
        properties: { ...(entity['properties'] as object), change },
      });
      expect(put.status).toBe(200);
    }
    expect((await pipeline.request('DELETE', `/api/v1/nodes/${leaving}`)).status).toBeLessThan(300);
    const last = await pipeline.revision();
    await eventually(
      () =>
        pipeline.events.confirmations.some((event) => event.relayId === 'root' && event.revision >= last - 1),
      {
        what: `relay root confirming revision ${last - 1}`,
        timeoutMs: 120_000,
      },
    );
    await eventually(async () => (await fetchPolicies(root, leaving, leavingToken)).status !== 200, {
      what: `relay root no longer serving ${leaving}`,
      timeoutMs: 30_000,
    });

    const connection = {
      kafka: { brokers: [...getTestInfrastructure().kafkaBrokers] },
      namespace: pipeline.namespace,
    };
    const latest = await readLatestBundles(connection, { timeoutMs: 60_000 });
    const served = new Map<string, { hash: string; files: { path: string; sha256: string }[] }>();
    for (const node of fleet.nodes.filter((candidate) => candidate.id !== leaving)) {
      const response = await fetch(`${root.url}/nodes/${encodeURIComponent(node.id)}/policies`, {
        headers: { authorization: `Bearer ${await token(node.id)}`, accept: 'application/json' },
      });
      if (response.status === 200) served.set(node.id, (await response.json()) as never);
    }
    expect(latest.has(leaving)).toBe(false);
    expect([...latest.keys()].sort()).toEqual([...served.keys()].sort());
    for (const [nodeId, bundle] of latest)
      expect({
        nodeId,
        hash: bundle.hash,
        // The manifest's parts travel with the bundle; the node is served the manifest they make.
        files: [
          ...bundle.files.filter((file) => !isPartPath(file.path)).map((file) => file.sha256),
          bundle.manifestSha256,
        ].sort(),
      }).toEqual({
        nodeId,
        hash: served.get(nodeId)?.hash,
        files: served
          .get(nodeId)
          ?.files.map((file) => file.sha256)
          .sort(),
      });
    expect(latest.get(changing.at(-1)?.id ?? '')?.revision).toBeGreaterThan(last - changing.length - 2);
  }, 240_000);
});
