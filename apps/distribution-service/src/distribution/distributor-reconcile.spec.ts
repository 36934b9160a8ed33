import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { MemoryBundleCache } from '@policygen/cache';
import { BlobDirectory, FeedLog } from '@policygen/distribution';
import type { Fleet } from '@policygen/engine';
import { sha256, validateFleet } from '@policygen/engine';
import type { NodeBundleEvent } from '@policygen/events';
import { buildDemoFleetFile } from '@policygen/fleets';
import type { DistributedRecord } from './distributor';
import { Distributor } from './distributor';
import { placementOf } from '@policygen/store';

/**
 * A distributor starting on a feed written from another configuration than the one it is given:
 * after a crash that lost revisions the feed had (the embedded mode's configuration restored from
 * an older backup), and after removals that never reached the feed.
 */
describe('Distributor, at start, against the configuration', () => {
  let dir: string;
  let log: FeedLog;
  let blobs: BlobDirectory;
  const cache = new MemoryBundleCache();
  const validation = validateFleet(buildDemoFleetFile());
  if (!validation.ok) throw new Error('the demo fleet is invalid');
  const fleet = validation.fleet;
  const [a, b, c] = fleet.nodes.filter((node) => node.policyServer === 'root');
  if (!a || !b || !c) throw new Error('the demo fleet has too few nodes on root');

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'distributor-reconcile-'));
    log = await FeedLog.open(join(dir, 'feed.jsonl'));
    blobs = await BlobDirectory.open(join(dir, 'blobs'));
  });
  afterEach(async () => {
    await log.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function started(
    revision: number,
    nodes: Fleet['nodes'],
    told: DistributedRecord[] = [],
  ): Promise<Distributor> {
    const distributor = new Distributor({
      log,
      blobs,
      cache,
      snapshots: { latestPlacement: async () => ({ revision, placement: placementOf({ ...fleet, nodes }) }) },
      logger: pino({ level: 'silent' }),
      tokenSecret: 'a-secret-long-enough-for-node-keys',
      recordsDistributed: true,
      onWritten: async ({ distributed: records }) => {
        told.push(...records);
      },
    });
    await distributor.start();
    return distributor;
  }

  async function bundle(nodeId: string, version: string, revision: number): Promise<NodeBundleEvent> {
    const contents = [`{"node":"${nodeId}","revision":${revision}}`, `bundle common ${version} {}`];
    await cache.putBlobs(contents.map((content) => ({ sha256: sha256(content), content })));
    const [manifest, file] = contents as [string, string];
    return {
      schemaVersion: 1,
      type: 'node.bundle',
      nodeId,
      revision,
      committedAt: '2026-11-24T00:00:00.000Z',
      generatedAt: '2026-11-24T00:00:01.000Z',
      // As the engine's: the files' hash, not the manifest's (which names the revision).
      hash: `sha256:${sha256(file)}`,
      files: [{ path: 'rules/f.cf', sha256: sha256(file) }],
      manifestSha256: sha256(manifest),
    };
  }

  const served = (nodeId: string): [number, string | null] | undefined => {
    const entry = log.latest(nodeId);
    return entry && [entry.revision, entry.bundle?.hash ?? null];
  };

  it('on a feed ahead of the configuration: says so, and takes the bundles of the lower revision, replacing same-content ones once', async () => {
    const before = await started(7, [a, b, c]);
    await before.bundles(
      await Promise.all([
        bundle(a.id, 'a-lost', 7).then((event) => ({ event, receivedAt: 0 })),
        bundle(b.id, 'b', 7).then((event) => ({ event, receivedAt: 0 })),
      ]),
    );
    expect(before.status().rebased).toBeUndefined();

    // The configuration comes back at revision 2: the feed's revisions 3 to 7 are lost.
    const after = await started(2, [a, b, c]);
    expect(after.status().rebased).toEqual({ feedRevision: 7, configRevision: 2 });
    await after.bundles([
      { event: await bundle(a.id, 'a', 2), receivedAt: 0 },
      { event: await bundle(b.id, 'b', 2), receivedAt: 0 },
    ]);
    expect(served(a.id)).toEqual([2, `sha256:${sha256('bundle common a {}')}`]);
    // Same files, but its manifest named a lost revision: replaced once, then deduplicated again.
    expect(served(b.id)).toEqual([2, `sha256:${sha256('bundle common b {}')}`]);
    const cursor = log.cursor;
    await after.bundles([{ event: await bundle(b.id, 'b', 2), receivedAt: 0 }]);
    expect(log.cursor).toBe(cursor);
    // Older than the configuration's revision: stale, as always; newer ones go on as usual.
    await after.bundles([{ event: await bundle(a.id, 'a-older', 1), receivedAt: 0 }]);
    await after.bundles([{ event: await bundle(a.id, 'a-next', 3), receivedAt: 0 }]);
    expect(served(a.id)).toEqual([3, `sha256:${sha256('bundle common a-next {}')}`]);
  });

  it('on a feed behind or level with the configuration: unchanged bundles write nothing; nodes it no longer has are removed', async () => {
    const before = await started(3, [a, b, c]);
    await before.bundles(
      await Promise.all(
        [a, b, c].map(async (node) => ({ event: await bundle(node.id, node.id, 3), receivedAt: 0 })),
      ),
    );
    // Restarted at revision 4, which deleted c: a removal the generator's (lost) cache never sent.
    const told: DistributedRecord[] = [];
    const after = await started(4, [a, b], told);
    expect(after.status().rebased).toBeUndefined();
    expect(served(c.id)).toEqual([4, null]);
    expect(told).toEqual([{ nodeId: c.id, bundle: null }]);
    const cursor = log.cursor;
    // The generator's catch-up at revision 4: the same files, nothing new for a relay.
    await after.bundles([
      { event: await bundle(a.id, a.id, 4), receivedAt: 0 },
      { event: await bundle(b.id, b.id, 4), receivedAt: 0 },
    ]);
    expect(log.cursor).toBe(cursor);
    expect(served(a.id)?.[0]).toBe(3);
  });
});
