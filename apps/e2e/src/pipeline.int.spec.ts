import { isDerivedPath, isPartPath } from '@policygen/distribution';
import { buildDemoFleet } from '@policygen/fleets';
import { createKafkaMessaging } from '@policygen/messaging';
import { eventually, getTestInfrastructure } from '@policygen/testing-infra';
import type { Entity } from './testing/pipeline';
import { generateWithCli, Pipeline } from './testing/pipeline';

/**
 * Issue 5's end-to-end path on real Postgres, Kafka and Redis, through the built services run as
 * processes: HTTP → config-service → Postgres + outbox → Kafka → generator-service → Redis + Kafka.
 * The reference for every bundle is `policygen generate` on the configuration the service exports.
 */

describe('the pipeline from HTTP to node bundles', () => {
  const pipeline = new Pipeline();

  beforeAll(async () => {
    await pipeline.start();
    await pipeline.startGenerator();
  }, 120_000);
  afterAll(async () => {
    await pipeline.stop();
  }, 60_000);

  it('publishes one bundle per node for an imported fleet, the hash `policygen generate` gives', async () => {
    const imported = await pipeline.request('POST', '/api/v1/import', buildDemoFleet());
    expect(imported.status).toBe(200);
    const revision = await pipeline.revision();
    const expected = generateWithCli(await pipeline.exportFleet());
    expect(expected.size).toBeGreaterThan(250);

    await eventually(() => pipeline.events.bundlesAt(revision).length >= expected.size, {
      what: `${expected.size} node bundles at revision ${revision}`,
      timeoutMs: 60_000,
    });
    await pipeline.settled(revision);
    await pipeline.events.quiet(() => true, 'the import');
    const published = pipeline.events.bundlesAt(revision);
    expect(published).toHaveLength(expected.size);
    expect(
      new Map(published.map((event) => [event.nodeId, event.type === 'node.bundle' ? event.hash : null])),
    ).toEqual(expected);
    expect(await pipeline.servedHashes()).toEqual(expected);
    // Every file of a published bundle can be fetched by its digest, but the two derived where the
    // node is served (its generation time, and its manifest, named apart): the manifest's parts can.
    const sample = published[0];
    if (sample?.type !== 'node.bundle') throw new Error('expected a node.bundle event');
    const held = sample.files.filter((file) => !isDerivedPath(file.path));
    expect(held.filter((file) => isPartPath(file.path))).toHaveLength(2);
    expect(sample.files.length - held.length).toBe(1);
    for (const file of held) expect(await pipeline.bundleCache().getBlob(file.sha256)).not.toBeNull();
    // Nodes in the `ignored` state get nothing, and say so in their generation result.
    const ignored = pipeline.events.resultsAt(revision).filter((event) => !expected.has(event.nodeId));
    expect(ignored.map((event) => event.hash)).toEqual(ignored.map(() => null));
    expect(pipeline.events.schemaErrors).toEqual([]);
  });

  it("publishes exactly one bundle for a change to one node's property", async () => {
    const node = (await pipeline.request('GET', '/api/v1/nodes/web-par-001')).body as Entity;
    const properties = { ...(node['properties'] as Entity), e2e_marker: 'one node' };
    const sent = Date.now();
    const replaced = await pipeline.request('PUT', '/api/v1/nodes/web-par-001', { ...node, properties });
    expect(replaced.status).toBe(200);
    const revision = await pipeline.revision();
    await eventually(() => pipeline.events.bundlesAt(revision).length > 0, { what: 'the new bundle' });
    // Seen by a consumer of the bundle topic: HTTP, commit, outbox, Kafka twice, generation, Redis.
    process.stdout.write(`one node's property: request to bundle event in ${Date.now() - sent} ms\n`);
    await pipeline.settled(revision);
    await pipeline.events.quiet(
      () => pipeline.events.resultsAt(revision).length > 0,
      'its generation result',
    );

    const bundles = pipeline.events.bundlesAt(revision);
    expect(bundles.map((event) => event.nodeId)).toEqual(['web-par-001']);
    expect(pipeline.events.resultsAt(revision).map((event) => [event.nodeId, event.outcome])).toEqual([
      ['web-par-001', 'generated'],
    ]);
    const expected = generateWithCli(await pipeline.exportFleet());
    expect(await pipeline.servedHashes()).toEqual(expected);
    expect(pipeline.events.schemaErrors).toEqual([]);
  });

  it("publishes exactly the affected nodes' bundles for a directive change", async () => {
    const before = generateWithCli(await pipeline.exportFleet());
    const directive = (await pipeline.request('GET', '/api/v1/directives/pkg-nginx')).body as Entity;
    const parameters = { ...(directive['parameters'] as Entity), state: 'latest' };
    const replaced = await pipeline.request('PUT', '/api/v1/directives/pkg-nginx', {
      ...directive,
      parameters,
    });
    expect(replaced.status).toBe(200);
    const revision = await pipeline.revision();
    const after = generateWithCli(await pipeline.exportFleet());
    const changed = [...after]
      .filter(([nodeId, hash]) => before.get(nodeId) !== hash)
      .map(([nodeId]) => nodeId);
    expect(changed.length).toBeGreaterThan(10);
    expect(changed.length).toBeLessThan(after.size / 2);

    await pipeline.settled(revision);
    await pipeline.events.quiet(
      () => pipeline.events.bundlesAt(revision).length >= changed.length,
      `${changed.length} bundles at revision ${revision}`,
    );
    const bundles = pipeline.events.bundlesAt(revision);
    expect(bundles.map((event) => event.nodeId).sort()).toEqual(changed.sort());
    expect(await pipeline.servedHashes()).toEqual(after);
    expect(pipeline.events.schemaErrors).toEqual([]);
  });

  it('survives a poison message and a revision gap in the change log, and ends where the log ends', async () => {
    const revision = await pipeline.revision();
    const messaging = createKafkaMessaging({ brokers: getTestInfrastructure().kafkaBrokers });
    const producer = await messaging.createProducer();
    const admin = await messaging.createAdmin();
    try {
      // Not an event at all, then revision r+2 ahead of r+1, as if the log had lost one.
      await producer.send(pipeline.topics.configChanges, [
        { key: 'config', value: 'not json' },
        {
          key: 'config',
          value: JSON.stringify({
            schemaVersion: 1,
            type: 'config.change',
            revision: revision + 2,
            committedAt: new Date().toISOString(),
            changeSet: { upsert: {}, delete: {} },
          }),
        },
      ]);
      expect(await admin.listTopics()).toContain(`${pipeline.topics.configChanges}.dlq`);
    } finally {
      await producer.close();
      await admin.close();
    }
    await eventually(() => pipeline.logs(Infinity).includes('gap or divergence in the change log'), {
      what: 'the generator to notice the gap',
    });
    expect(pipeline.logs(Infinity)).toContain('unreadable event sent to the DLQ');

    // The real r+1 and r+2: the generator's new snapshot has to reach r+2.
    for (const [nodeId, step] of [
      ['db-par-001', 1],
      ['db-par-002', 2],
    ] as const) {
      const node = (await pipeline.request('GET', `/api/v1/nodes/${nodeId}`)).body as Entity;
      const properties = { ...(node['properties'] as Entity), e2e_after_gap: step };
      expect((await pipeline.request('PUT', `/api/v1/nodes/${nodeId}`, { ...node, properties })).status).toBe(
        200,
      );
    }
    await pipeline.settled(revision + 2);
    await pipeline.events.quiet(
      () => pipeline.events.bundlesAt(revision + 2).length >= 2,
      'the bundles after the gap',
    );
    expect(
      pipeline.events
        .bundlesAt(revision + 2)
        .map((event) => event.nodeId)
        .sort(),
    ).toEqual(['db-par-001', 'db-par-002']);
    expect(await pipeline.servedHashes()).toEqual(generateWithCli(await pipeline.exportFleet()));
  });
});
