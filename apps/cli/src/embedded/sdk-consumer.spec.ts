import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { buildDemoFleet } from '@policygen/fleets';
import type { GenerationEvent, SdkLogger } from '@policygen/sdk';
import {
  BundleFiles,
  MANIFEST_PATH,
  TOPICS,
  createConsumer,
  isManifestPartPath,
  readLatestBundles,
} from '@policygen/sdk';
import { eventually } from '@policygen/testing-infra';
import type { EmbeddedPipeline } from './embedded-pipeline';
import { MOUNTS, settled, startEmbeddedPipeline } from './embedded-pipeline';

const quiet: SdkLogger = { info: () => undefined, warn: () => undefined, error: () => undefined };
const CHANGES = 1_000;

interface Node {
  readonly id: string;
  readonly policyServer?: string;
  readonly properties?: Record<string, unknown>;
}

/**
 * `@policygen/sdk` against `policygen start`'s event stream, as an outside process would use it:
 * the same consumer code as on Kafka, given `{ stream: { url } }` instead of brokers.
 */
describe('an SDK consumer of policygen start', () => {
  const directory = mkdtempSync(join(tmpdir(), 'policygen-sdk-embedded-'));
  let pipeline: EmbeddedPipeline;
  let revision = 0;

  const api = async (method: string, path: string, body?: unknown): Promise<Response> => {
    const response = await fetch(`${pipeline.url}${path}`, {
      method,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${pipeline.adminToken}` },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const answer = response.clone();
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    const revisionHeader = response.headers.get('x-policygen-revision') ?? response.headers.get('etag');
    const parsed = Number(/\d+/.exec(revisionHeader ?? '')?.[0]);
    if (Number.isFinite(parsed) && parsed > revision) revision = parsed;
    return answer;
  };

  beforeAll(async () => {
    pipeline = await startEmbeddedPipeline({
      host: '127.0.0.1',
      port: 0,
      dataDir: directory,
      logger: pino({ level: 'silent' }),
    });
    const imported = (await (await api('POST', '/api/v1/import', buildDemoFleet())).json()) as {
      revision: number;
    };
    revision = imported.revision;
    await eventually(() => settled(pipeline, revision), {
      what: 'the demo fleet distributed',
      timeoutMs: 120_000,
    });
  }, 180_000);

  afterAll(async () => {
    await pipeline.stop();
    rmSync(directory, { recursive: true, force: true });
  });

  it('receives the events of a change; a poison message goes to the DLQ while the next ones arrive', async () => {
    const results: GenerationEvent[] = [];
    const changes: number[] = [];
    const consumer = createConsumer(
      { stream: { url: pipeline.url, token: pipeline.adminToken } },
      { groupId: 'sdk-test', logger: quiet, retry: { attempts: 2, initialDelayMs: 1, maxDelayMs: 2 } },
    )
      .subscribe(TOPICS.configChanges, (event) => void changes.push(event.revision))
      .subscribe(TOPICS.generationEvents, (event) => void results.push(event));
    await consumer.start();
    await consumer.caughtUp(TOPICS.generationEvents);

    const producer = await pipeline.messaging.createProducer();
    await producer.send(TOPICS.generationEvents, [
      { key: 'web-par-001', value: '{"type": "generation.result"}' },
    ]);
    await producer.close();
    const node = (await (await api('GET', '/api/v1/nodes/web-par-001')).json()) as Node;
    await api('PUT', '/api/v1/nodes/web-par-001', {
      ...node,
      properties: { ...node.properties, motd: 'sdk' },
    });
    const changed = revision;

    await eventually(
      () => results.some((event) => event.nodeId === 'web-par-001' && event.revision === changed),
      {
        what: "the change's generation result after the poison message",
        timeoutMs: 30_000,
      },
    );
    expect(changes).toContain(changed);
    expect(consumer.stats().deadLettered).toBe(1);
    const letters = pipeline.messaging.log.read(`${TOPICS.generationEvents}.dlq`, 0, 0, 10);
    expect(letters.map((letter) => letter.value?.toString())).toContain('{"type": "generation.result"}');
    expect(letters.map((letter) => letter.headers['policygen-error'])).toContainEqual(
      expect.stringContaining('$.nodeId'),
    );
    await consumer.stop();
  }, 60_000);

  it(`rebuilds every node's current bundle after ${CHANGES} changes from the compacted topic, as the relay serves it`, async () => {
    const fleet = buildDemoFleet() as { readonly nodes: readonly Node[] };
    const servers = new Set(fleet.nodes.map((node) => node.policyServer));
    const leaves = fleet.nodes.filter((node) => !servers.has(node.id) && node.id !== 'root');
    const deleted = leaves.slice(-10).map((node) => node.id);
    const changing = leaves.slice(0, 40);
    for (let change = 0; change < CHANGES - deleted.length; change++) {
      const node = changing[change % changing.length] as Node;
      await api('PUT', `/api/v1/nodes/${node.id}`, { ...node, properties: { ...node.properties, change } });
    }
    const formerTokens = new Map<string, string>();
    for (const id of deleted) {
      const { token } = (await (await api('POST', `/api/v1/nodes/${id}/token`)).json()) as { token: string };
      formerTokens.set(id, token);
      await api('DELETE', `/api/v1/nodes/${id}`);
    }
    // The ETag of a read is the configuration's revision.
    await api('GET', `/api/v1/nodes/${changing[0]?.id}`);
    await eventually(() => settled(pipeline, revision), {
      what: `revision ${revision} distributed`,
      timeoutMs: 180_000,
    });

    const latest = await readLatestBundles(
      { stream: { url: pipeline.url, token: pipeline.adminToken } },
      { logger: quiet, timeoutMs: 60_000 },
    );

    const served = new Map<
      string,
      { hash: string; revision: number; files: { path: string; sha256: string }[] }
    >();
    for (const node of fleet.nodes.filter((candidate) => !deleted.includes(candidate.id))) {
      const { token } = (await (await api('POST', `/api/v1/nodes/${node.id}/token`)).json()) as {
        token: string;
      };
      const response = await fetch(`${pipeline.url}${MOUNTS.relay}/nodes/${node.id}/policies`, {
        headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
      });
      if (response.status === 200) served.set(node.id, (await response.json()) as never);
    }
    // A deleted node gets no new token, and its old one fetches nothing from the relay.
    for (const [id, token] of formerTokens) {
      expect(
        (
          await fetch(`${pipeline.url}/api/v1/nodes/${id}/token`, {
            method: 'POST',
            headers: { authorization: `Bearer ${pipeline.adminToken}` },
          })
        ).status,
      ).toBe(404);
      const fetched = await fetch(`${pipeline.url}${MOUNTS.relay}/nodes/${id}/policies`, {
        headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
      });
      expect({ id, status: fetched.status }).toEqual({ id, status: 401 });
    }
    expect(pipeline.distribution.distributor.status().served).toBe(served.size);
    expect([...latest.keys()].sort()).toEqual([...served.keys()].sort());
    expect(deleted.filter((id) => latest.has(id))).toEqual([]);
    for (const [nodeId, bundle] of latest) {
      const relay = served.get(nodeId);
      expect({ nodeId, hash: bundle.hash }).toEqual({ nodeId, hash: relay?.hash });
      // The manifest's parts travel with the bundle; the relay serves the manifest they make.
      const files = [
        ...bundle.files.filter((file) => !isManifestPartPath(file.path)),
        { path: MANIFEST_PATH, sha256: bundle.manifestSha256 },
      ];
      expect(files.map((file) => `${file.path} ${file.sha256}`).sort()).toEqual(
        relay?.files.map((file) => `${file.path} ${file.sha256}`).sort(),
      );
    }
    // The changed nodes are at their last change; their files can be fetched by digest, and match.
    const last = changing.at(-1) as Node;
    const bundle = latest.get(last.id);
    expect(bundle?.revision).toBeGreaterThan(1);
    // Blobs are read with a credential that may read them: here the node's own token.
    const { token } = (await (await api('POST', `/api/v1/nodes/${last.id}/token`)).json()) as {
      token: string;
    };
    const contents = await new BundleFiles({ url: `${pipeline.url}${MOUNTS.distribution}`, token }).bundle(
      bundle as never,
    );
    const tree = bundle?.files.filter((file) => !isManifestPartPath(file.path)) ?? [];
    expect([...contents.keys()].sort()).toEqual([...tree.map((file) => file.path), MANIFEST_PATH].sort());
    expect(contents.get('rules/cfengine-community/properties.d/properties.json')?.toString()).toContain(
      '"change"',
    );
  }, 300_000);
});
