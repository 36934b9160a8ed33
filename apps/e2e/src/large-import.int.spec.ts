import { createHash } from 'node:crypto';
import { isPartPath } from '@policygen/distribution';
import { manifestFromParts } from '@policygen/engine';
import { buildBenchFleet } from '@policygen/fleets';
import { MANIFEST_HEAD_PATH, MANIFEST_PROPERTIES_PATH } from '@policygen/sdk';
import { eventually } from '@policygen/testing-infra';
import { generateWithCli, Pipeline } from './testing/pipeline';

/**
 * An import larger than what one Kafka request may carry goes through, to the relay: the 300-node
 * demo fleet stayed under the broker's 1 MiB limit, and anything much larger used to be refused
 * (MESSAGE_TOO_LARGE) and retried forever. Real Postgres, Kafka and Redis, services as processes.
 */

const NODES = 1_500;

describe('an import larger than one batch', () => {
  const pipeline = new Pipeline();

  beforeAll(async () => {
    await pipeline.start();
    await pipeline.startGenerator();
    const distribution = await pipeline.startDistribution();
    await pipeline.startRelay('root', distribution.url);
  }, 120_000);
  afterAll(async () => {
    await pipeline.stop();
  }, 60_000);

  it(`reaches the relay for every one of ${NODES} nodes, with the hashes \`policygen generate\` gives`, async () => {
    const fleet = buildBenchFleet({ nodes: NODES, seed: 7 });
    const imported = await pipeline.request('POST', '/api/v1/import', fleet.fleet);
    expect(imported.status).toBe(200);
    const revision = await pipeline.revision();
    const expected = generateWithCli(await pipeline.exportFleet());
    expect(expected.size).toBeGreaterThan(NODES * 0.9);

    const confirmed = (): Map<string, string> =>
      new Map(
        pipeline.events.confirmations
          .filter((event) => event.relayId === 'root' && event.revision >= revision)
          .map((event) => [event.nodeId, event.hash]),
      );
    await eventually(() => confirmed().size >= expected.size, {
      what: `relay root's confirmations of ${expected.size} nodes`,
      timeoutMs: 180_000,
      intervalMs: 250,
    });
    await pipeline.events.quiet(() => true, 'the import');

    expect(confirmed()).toEqual(expected);
    expect(await pipeline.servedHashes()).toEqual(expected);
    const published = pipeline.events.bundlesAt(revision);
    expect(new Set(published.map((event) => event.nodeId))).toEqual(new Set(expected.keys()));
    // What one slice of the generator publishes is well over the broker's 1 MiB per request.
    const bytes = published.reduce((sum, event) => sum + Buffer.byteLength(JSON.stringify(event)), 0);
    expect(bytes / Math.ceil(published.length / 500)).toBeGreaterThan(1024 * 1024);
    // Events name the manifest by digest (claim-check); it is put together where the node is
    // served from its two parts, which are in the cache like any file, and has that digest.
    const sample = published[0];
    if (sample?.type !== 'node.bundle' || !sample.manifestSha256)
      throw new Error('a node.bundle with its manifest digest');
    expect(sample.manifest).toBeUndefined();
    const part = async (path: string): Promise<string> =>
      (await pipeline.bundleCache().getBlob(sample.files.find((file) => file.path === path)?.sha256 ?? '')) ??
      '';
    const manifest = manifestFromParts(
      {
        nodeId: sample.nodeId,
        configRevision: sample.revision,
        files: sample.files.filter((file) => !isPartPath(file.path)),
        hash: sample.hash,
      },
      { head: await part(MANIFEST_HEAD_PATH), properties: await part(MANIFEST_PROPERTIES_PATH) },
    );
    expect(createHash('sha256').update(manifest).digest('hex')).toBe(sample.manifestSha256);
    expect(JSON.parse(manifest)).toMatchObject({ nodeId: sample.nodeId, hash: sample.hash });
    expect(pipeline.events.results.filter((event) => event.outcome === 'failed')).toEqual([]);
    expect(pipeline.events.schemaErrors).toEqual([]);
  }, 300_000);
});
