import { mkdtemp, rm, truncate } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { MemoryBundleCache } from '@policygen/cache';
import { BlobDirectory, DiskHealth, FeedLog, nodeKey } from '@policygen/distribution';
import { GENERATED_AT_FILE, sha256, validateFleet } from '@policygen/engine';
import { MANIFEST_HEAD_PATH, MANIFEST_PROPERTIES_PATH } from '@policygen/sdk';
import type { Fleet } from '@policygen/engine';
import type { NodeBundleEvent } from '@policygen/events';
import { buildDemoFleetFile } from '@policygen/fleets';
import type { DistributedRecord, DistributorOptions } from './distributor';
import { Distributor } from './distributor';
import { placementOf } from '@policygen/store';

/** The bundle hash of a node.bundle event. */
const hashOf = (event: NodeBundleEvent): string | null => (event.type === 'node.bundle' ? event.hash : null);

describe('Distributor', () => {
  let dir: string;
  let log: FeedLog;
  let blobs: BlobDirectory;
  const cache = new MemoryBundleCache();

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'distributor-'));
    log = await FeedLog.open(join(dir, 'feed.jsonl'));
    blobs = await BlobDirectory.open(join(dir, 'blobs'));
  });
  afterEach(async () => {
    await log.close();
    await rm(dir, { recursive: true, force: true });
  });

  function bundleOf(nodeId: string, contents: readonly string[]): NodeBundleEvent {
    const [manifest, ...files] = contents;
    return {
      schemaVersion: 1,
      type: 'node.bundle',
      nodeId,
      revision: 1,
      committedAt: '2026-11-24T00:00:00.000Z',
      generatedAt: '2026-11-24T00:00:01.000Z',
      hash: `sha256:${sha256(contents.join(''))}`,
      files: files.map((content, index) => ({ path: `rules/f${index}.cf`, sha256: sha256(content) })),
      manifestSha256: sha256(manifest as string),
    };
  }

  /** A distributor on this test's log, blobs and cache, for a configuration at revision 1. */
  function distributorOn(
    fleet: Fleet,
    options: Pick<
      DistributorOptions,
      'onMissingBlobs' | 'onWritten' | 'onGroupCommit' | 'recordsDistributed'
    > & {
      tokenSecret?: string | null;
      cache?: DistributorOptions['cache'];
    } = {},
  ): Distributor {
    return new Distributor({
      log,
      blobs,
      cache,
      snapshots: { latestPlacement: async () => ({ revision: 1, placement: placementOf(fleet) }) },
      logger: pino({ level: 'silent' }),
      tokenSecret: null,
      ...options,
    });
  }

  it('leaves out a bundle whose files the cache lost, serves the others, and asks for it again', async () => {
    const validation = validateFleet(buildDemoFleetFile());
    if (!validation.ok) throw new Error('the demo fleet is invalid');
    const [first, second] = validation.fleet.nodes.filter((node) => node.policyServer === 'root');
    if (!first || !second) throw new Error('the demo fleet has too few nodes on root');
    const asked: { nodeId: string; revision: number }[] = [];
    const distributor = distributorOn(validation.fleet, {
      onMissingBlobs: async (bundles) => {
        asked.push(...bundles);
      },
    });
    await distributor.start();
    const whole = [`{"node":"${first.id}"}`, 'bundle common a {}', 'shared'];
    const lacking = [`{"node":"${second.id}"}`, 'bundle common b {}', 'shared'];
    await cache.putBlobs(
      [...whole, ...lacking.slice(0, 1)].map((content) => ({ sha256: sha256(content), content })),
    );

    await distributor.bundles([
      { event: bundleOf(first.id, whole), receivedAt: Date.now() },
      { event: bundleOf(second.id, lacking), receivedAt: Date.now() },
    ]);

    expect(
      log
        .latest(first.id)
        ?.bundle?.files.map((file) => file.sha256)
        .sort(),
    ).toEqual(whole.map(sha256).sort());
    expect(log.latest(second.id)).toBeUndefined();
    expect(asked).toEqual([{ nodeId: second.id, revision: 1 }]);
    for (const content of whole) expect(blobs.has(sha256(content))).toBe(true);
  });

  it('tells what became current once it is on disk: new bundles, removals; not stale, repeated or incomplete ones', async () => {
    const validation = validateFleet(buildDemoFleetFile());
    if (!validation.ok) throw new Error('the demo fleet is invalid');
    const [a, b, c] = validation.fleet.nodes.filter((node) => node.policyServer === 'root');
    if (!a || !b || !c) throw new Error('the demo fleet has too few nodes on root');
    const told: DistributedRecord[][] = [];
    const distributor = distributorOn(validation.fleet, {
      onMissingBlobs: async () => undefined,
      recordsDistributed: true,
      onWritten: async ({ entries, distributed: records }) => {
        // Called after the append: the feed already serves what it is told.
        for (const entry of entries) expect(log.latest(entry.nodeId)).toEqual(entry);
        if (records.length === 0) return;
        for (const record of records)
          expect(log.latest(record.nodeId)?.bundle?.hash ?? null).toBe(record.bundle?.hash ?? null);
        told.push([...records]);
      },
    });
    await distributor.start();
    const contents = (node: string, version: string) => [`{"node":"${node}"}`, `bundle common ${version} {}`];
    for (const [node, version] of [
      [a.id, 'a1'],
      [a.id, 'a2'],
      [b.id, 'b1'],
    ] as const)
      await cache.putBlobs(contents(node, version).map((content) => ({ sha256: sha256(content), content })));
    const at = (event: NodeBundleEvent, revision: number): NodeBundleEvent => ({ ...event, revision });
    const a1 = at(bundleOf(a.id, contents(a.id, 'a1')), 2);
    const a2 = at(bundleOf(a.id, contents(a.id, 'a2')), 3);
    const b1 = at(bundleOf(b.id, contents(b.id, 'b1')), 2);

    await distributor.bundles([
      { event: a1, receivedAt: 0 },
      { event: b1, receivedAt: 0 },
      // c's files are in no cache: left out, so not current.
      { event: at(bundleOf(c.id, contents(c.id, 'lost')), 2), receivedAt: 0 },
    ]);
    await distributor.bundles([{ event: a2, receivedAt: 0 }]);
    // Older than what a serves, and the same bundle again: nothing becomes current.
    await distributor.bundles([{ event: a1, receivedAt: 0 }]);
    await distributor.bundles([{ event: at(a2, 4), receivedAt: 0 }]);
    await distributor.bundles([
      {
        event: {
          schemaVersion: 1,
          type: 'node.deleted',
          nodeId: b.id,
          revision: 5,
          committedAt: a1.committedAt,
        },
        receivedAt: 0,
      },
    ]);

    expect(
      told.map((records) => records.map(({ nodeId, bundle }) => [nodeId, bundle?.revision ?? null])),
    ).toEqual([
      [
        [a.id, 2],
        [b.id, 2],
      ],
      [[a.id, 3]],
      [[b.id, null]],
    ]);
    expect(told[1]?.[0]?.bundle).toEqual(a2);
  });

  it('writes the batches handed over together, and those that come while it writes, in one write each', async () => {
    const validation = validateFleet(buildDemoFleetFile());
    if (!validation.ok) throw new Error('the demo fleet is invalid');
    const nodes = validation.fleet.nodes.filter((node) => node.policyServer === 'root').slice(0, 3);
    if (nodes.length < 3) throw new Error('the demo fleet has too few nodes on root');
    const writes: string[][] = [];
    const groups: number[] = [];
    const distributor = distributorOn(validation.fleet, {
      onWritten: async ({ entries, distributed }) => {
        // Without the latest-bundles topic, nothing is told but the entries.
        expect(distributed).toEqual([]);
        if (entries.length > 0) writes.push(entries.map(({ nodeId }) => nodeId));
      },
      onGroupCommit: (batches) => groups.push(batches),
    });
    await distributor.start();
    const events = await Promise.all(
      nodes.map(async (node) => {
        const contents = [`{"node":"${node.id}"}`, `bundle common ${node.id} {}`];
        await cache.putBlobs(contents.map((content) => ({ sha256: sha256(content), content })));
        return { ...bundleOf(node.id, contents), revision: 2 };
      }),
    );
    const [first, second, third] = events as [NodeBundleEvent, NodeBundleEvent, NodeBundleEvent];
    // Two handed over at once (the partitions of one fetch), then one while they are written.
    const together = [first, second].map((event) => distributor.bundles([{ event, receivedAt: Date.now() }]));
    await new Promise((resolve) => setImmediate(resolve));
    const meanwhile = distributor.bundles([{ event: third, receivedAt: Date.now() }]);
    await Promise.all([...together, meanwhile]);
    expect(groups).toEqual([2, 1]);
    expect(writes).toEqual([nodes.slice(0, 2).map((node) => node.id), [nodes[2]?.id]]);
  });

  it('forwards an event already in its distributed form as received, and encodes the others', async () => {
    const validation = validateFleet(buildDemoFleetFile());
    if (!validation.ok) throw new Error('the demo fleet is invalid');
    const [a, b] = validation.fleet.nodes.filter((node) => node.policyServer === 'root');
    if (!a || !b) throw new Error('the demo fleet has too few nodes on root');
    const told: DistributedRecord[] = [];
    const distributor = distributorOn(validation.fleet, {
      recordsDistributed: true,
      onWritten: async ({ distributed: records }) => {
        told.push(...records);
      },
    });
    await distributor.start();
    const contentsOf = (node: string) => [`{"node":"${node}"}`, `bundle common ${node} {}`];
    for (const node of [a.id, b.id])
      await cache.putBlobs(contentsOf(node).map((content) => ({ sha256: sha256(content), content })));
    const current = { ...bundleOf(a.id, contentsOf(a.id)), revision: 2 };
    // An older generator's event: no generation time of its own (the message's is used).
    const older = { ...bundleOf(b.id, contentsOf(b.id)), revision: 2, generatedAt: undefined };
    const asReceived = (event: NodeBundleEvent): Buffer => Buffer.from(JSON.stringify(event));
    await distributor.bundles([
      { event: current, receivedAt: 0, json: asReceived(current) },
      { event: older, receivedAt: Date.parse('2026-11-24T00:00:02.000Z'), json: asReceived(older) },
    ]);

    const [forwarded, encoded] = told;
    expect(forwarded?.json?.toString()).toBe(JSON.stringify(current));
    expect(JSON.parse(forwarded?.json?.toString() ?? 'null')).toEqual(forwarded?.bundle);
    expect(encoded?.json).toBeUndefined();
    expect(encoded?.bundle?.generatedAt).toBe('2026-11-24T00:00:02.000Z');
  });

  it('gives every held bundle the node key of the secret it starts with: a rotated secret revokes the old tokens at every relay', async () => {
    const validation = validateFleet(buildDemoFleetFile());
    if (!validation.ok) throw new Error('the demo fleet is invalid');
    const [node] = validation.fleet.nodes.filter((candidate) => candidate.policyServer === 'root');
    if (!node) throw new Error('the demo fleet has no node on root');
    const started = async (tokenSecret: string): Promise<Distributor> => {
      const distributor = new Distributor({
        log,
        blobs,
        cache,
        snapshots: {
          latestPlacement: async () => ({ revision: 1, placement: placementOf(validation.fleet) }),
        },
        logger: pino({ level: 'silent' }),
        tokenSecret,
      });
      await distributor.start();
      return distributor;
    };
    const contents = [`{"node":"${node.id}"}`, 'bundle common k {}'];
    await cache.putBlobs(contents.map((content) => ({ sha256: sha256(content), content })));
    const first = await started('the-first-secret-long-enough');
    await first.bundles([{ event: bundleOf(node.id, contents), receivedAt: Date.now() }]);
    const written = log.latest(node.id);
    expect(written?.bundle?.nodeKey).toBe(nodeKey('the-first-secret-long-enough', node.id));

    await started('the-first-secret-long-enough');
    expect(log.latest(node.id)?.seq).toBe(written?.seq);

    await started('a-rotated-secret-long-enough');
    expect(log.latest(node.id)).toMatchObject({
      revision: written?.revision,
      bundle: {
        hash: written?.bundle?.hash,
        nodeKey: nodeKey('a-rotated-secret-long-enough', node.id),
        catchUp: true,
      },
    });
    expect(log.latest(node.id)?.seq).toBeGreaterThan(written?.seq ?? 0);
  });

  /** Two nodes of the demo fleet served by root, and a distributor over the test's files and `cache`. */
  function twoNodes(): { a: string; b: string; fleet: ReturnType<typeof demoFleet> } {
    const fleet = demoFleet();
    const [a, b] = fleet.nodes.filter((node) => node.policyServer === 'root');
    if (!a || !b) throw new Error('the demo fleet has too few nodes on root');
    return { a: a.id, b: b.id, fleet };
  }
  function demoFleet() {
    const validation = validateFleet(buildDemoFleetFile());
    if (!validation.ok) throw new Error('the demo fleet is invalid');
    return validation.fleet;
  }

  it('writes batches that arrive during a write together, each call resolved once its bundles are on disk; a failed write fails every waiting call and the next one goes through', async () => {
    const { a, b, fleet } = twoNodes();
    let failNext = false;
    const flaky = new MemoryBundleCache();
    const getBlobs = flaky.getBlobs.bind(flaky);
    flaky.getBlobs = async (digests) => {
      if (failNext) {
        failNext = false;
        throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
      }
      return getBlobs(digests);
    };
    const distributor = new Distributor({
      log,
      blobs,
      cache: flaky,
      snapshots: { latestPlacement: async () => ({ revision: 1, placement: placementOf(fleet) }) },
      logger: pino({ level: 'silent' }),
      tokenSecret: null,
    });
    await distributor.start();
    const contents = (node: string, version: string): string[] => [
      `{"node":"${node}","v":"${version}"}`,
      `body ${version}`,
    ];
    for (const [node, version] of [
      [a, '1'],
      [b, '1'],
      [a, '2'],
      [b, '2'],
    ] as const)
      await flaky.putBlobs(contents(node, version).map((content) => ({ sha256: sha256(content), content })));
    const cursor = log.cursor;

    const first = distributor.bundles([{ event: bundleOf(a, contents(a, '1')), receivedAt: 0 }]);
    const second = distributor.bundles([{ event: bundleOf(b, contents(b, '1')), receivedAt: 0 }]);
    const third = distributor.bundles([{ event: bundleOf(a, contents(a, '2')), receivedAt: 0 }]);
    await Promise.all([first, second, third]);
    // Called in one turn: written in one append, a's first bundle superseded by its second there.
    expect(log.cursor).toBe(cursor + 2);
    expect(log.latest(a)?.bundle?.hash).toBe(hashOf(bundleOf(a, contents(a, '2'))));
    expect(log.latest(b)?.bundle?.hash).toBe(hashOf(bundleOf(b, contents(b, '1'))));

    failNext = true;
    const failed = [
      distributor.bundles([{ event: bundleOf(b, contents(b, '2')), receivedAt: 0 }]),
      distributor.bundles([{ event: bundleOf(a, contents(a, '1')), receivedAt: 0 }]),
    ];
    for (const call of failed) await expect(call).rejects.toMatchObject({ code: 'ENOSPC' });
    expect(log.cursor).toBe(cursor + 2);
    await distributor.bundles([{ event: bundleOf(b, contents(b, '2')), receivedAt: 0 }]);
    expect(log.latest(b)?.bundle?.hash).toBe(hashOf(bundleOf(b, contents(b, '2'))));
  });

  it('restores at start the blobs that opening dropped as torn: from the cache, and asks for the nodes whose files it lost', async () => {
    const { a, b, fleet } = twoNodes();
    const options = {
      log,
      cache,
      snapshots: { latestPlacement: async () => ({ revision: 1, placement: placementOf(fleet) }) },
      logger: pino({ level: 'silent' }),
      tokenSecret: null,
    };
    const contents = (node: string): string[] => [`{"node":"${node}","torn":true}`, `torn body of ${node}`];
    await cache.putBlobs(
      [...contents(a), ...contents(b)].map((content) => ({ sha256: sha256(content), content })),
    );
    const first = new Distributor({ ...options, blobs });
    await first.start();
    await first.bundles([
      { event: bundleOf(a, contents(a)), receivedAt: 0 },
      { event: bundleOf(b, contents(b)), receivedAt: 0 },
    ]);
    blobs.close();
    // A power loss took every blob's bytes; the cache has a's files only.
    await truncate(join(dir, 'blobs', 'packs', '000001.pack'), 0);
    const health = new DiskHealth();
    blobs = await BlobDirectory.open(join(dir, 'blobs'), { health });
    expect(health.repaired.map((repair) => repair.kind)).toContain('index-past-pack-end');
    const partial = new MemoryBundleCache();
    await partial.putBlobs(contents(a).map((content) => ({ sha256: sha256(content), content })));
    const asked: { nodeId: string; revision: number }[] = [];
    const restarted = new Distributor({
      ...options,
      cache: partial,
      blobs,
      onMissingBlobs: async (bundles) => {
        asked.push(...bundles);
      },
    });
    await restarted.start();
    for (const file of log.latest(a)?.bundle?.files ?? [])
      expect(sha256((await blobs.read(file.sha256)).toString())).toBe(file.sha256);
    expect(asked).toEqual([{ nodeId: b, revision: 1 }]);
  });
  /** A node.bundle event as today's generators publish it: the manifest's parts as files, the manifest derived. */
  function derivedBundleOf(nodeId: string, revision: number, contents: readonly string[]): NodeBundleEvent {
    const [head, properties, ...files] = contents;
    const listed = [
      { path: MANIFEST_HEAD_PATH, sha256: sha256(head as string) },
      { path: MANIFEST_PROPERTIES_PATH, sha256: sha256(properties as string) },
      ...files.map((content, index) => ({ path: `rules/f${index}.cf`, sha256: sha256(content) })),
      { path: GENERATED_AT_FILE, sha256: sha256('0\n') },
    ].sort((x, y) => (x.path < y.path ? -1 : 1));
    return {
      schemaVersion: 1,
      type: 'node.bundle',
      nodeId,
      revision,
      committedAt: '2026-11-24T00:00:00.000Z',
      generatedAt: '2026-11-24T00:00:01.000Z',
      hash: `sha256:${sha256(files.join(''))}`,
      files: listed,
      manifestSha256: sha256(`manifest of ${nodeId} at ${revision}`),
    };
  }

  it("looks up only the files a node's change alters: those its latest entry names alike are held", async () => {
    const { a, fleet } = twoNodes();
    const before = ['{"head":1}', `{"node":"${a}"}`, 'bundle common x {}', 'bundle common y {}'];
    const after = [
      '{"head":1}',
      `{"node":"${a}","changed":true}`,
      'bundle common x {}',
      'bundle common y {}',
    ];
    await cache.putBlobs([...before, ...after].map((content) => ({ sha256: sha256(content), content })));
    const distributor = distributorOn(fleet);
    await distributor.start();
    await distributor.bundles([{ event: derivedBundleOf(a, 1, before), receivedAt: 0 }]);
    const looked: string[] = [];
    const has = blobs.has.bind(blobs);
    blobs.has = (digest) => {
      looked.push(digest);
      return has(digest);
    };
    await distributor.bundles([{ event: derivedBundleOf(a, 1, after), receivedAt: 0 }]);
    expect(looked).toEqual([sha256(after[1] as string)]);
    for (const content of after) expect((await blobs.read(sha256(content))).toString()).toBe(content);
  });

  it('looks up again the files of a latest entry that opening dropped as torn and the cache lacked', async () => {
    const { a, fleet } = twoNodes();
    const contents = ['{"head":2}', `{"node":"${a}"}`, 'bundle common torn {}'];
    const stored = (content: string) => ({ sha256: sha256(content), content });
    await cache.putBlobs(contents.map(stored));
    const first = distributorOn(fleet);
    await first.start();
    await first.bundles([{ event: derivedBundleOf(a, 1, contents), receivedAt: 0 }]);
    blobs.close();
    await truncate(join(dir, 'blobs', 'packs', '000001.pack'), 0);
    blobs = await BlobDirectory.open(join(dir, 'blobs'));
    // The cache lost them too: the node is asked for again, and its bundle comes back the same.
    const lossy = new MemoryBundleCache();
    const asked: { nodeId: string; revision: number }[] = [];
    const restarted = distributorOn(fleet, {
      cache: lossy,
      onMissingBlobs: async (bundles) => {
        asked.push(...bundles);
      },
    });
    await restarted.start();
    expect(asked).toEqual([{ nodeId: a, revision: 1 }]);
    await lossy.putBlobs(contents.map(stored));
    await restarted.bundles([{ event: derivedBundleOf(a, 1, contents), receivedAt: 0 }]);
    for (const content of contents) expect((await blobs.read(sha256(content))).toString()).toBe(content);
  });
});
