import { join } from 'node:path';
import pino from 'pino';
import { MemoryBundleCache } from '@policygen/cache';
import { BlobDirectory, DiskHealth, FeedLog } from '@policygen/distribution';
import { sha256, validateFleet } from '@policygen/engine';
import type { NodeBundleEvent } from '@policygen/events';
import { buildDemoFleetFile } from '@policygen/fleets';
import { SmallDisk } from '@policygen/testing-infra';
import { Distributor } from './distributor';
import { placementOf } from '@policygen/store';

type BundleEvent = Extract<NodeBundleEvent, { type: 'node.bundle' }>;

/** The distribution-service's files on a full disk (a small tmpfs): clear errors, nothing torn, recovery. */
describe('the distributor on a disk that fills up', () => {
  let disk: SmallDisk;
  beforeAll(() => {
    disk = SmallDisk.mount(4 * 2 ** 20);
  });
  afterAll(() => disk.unmount());

  it('fails the batch with ENOSPC (for the transport to retry), keeps its files whole, and takes the batch once space is back', async () => {
    const validation = validateFleet(buildDemoFleetFile());
    if (!validation.ok) throw new Error('the demo fleet is invalid');
    const nodes = validation.fleet.nodes.filter((node) => node.policyServer === 'root').slice(0, 4);
    const cache = new MemoryBundleCache();
    const health = new DiskHealth(pino({ level: 'silent' }));
    const open = async (): Promise<{ log: FeedLog; blobs: BlobDirectory }> => ({
      log: await FeedLog.open(join(disk.path, 'feed.jsonl'), { durable: true, health }),
      blobs: await BlobDirectory.open(join(disk.path, 'blobs'), { health }),
    });
    let { log, blobs } = await open();
    const distributorOn = (): Distributor =>
      new Distributor({
        log,
        blobs,
        cache,
        snapshots: {
          latestPlacement: async () => ({ revision: 1, placement: placementOf(validation.fleet) }),
        },
        logger: pino({ level: 'silent' }),
        tokenSecret: null,
      });
    let distributor = distributorOn();
    await distributor.start();
    // Each bundle: a manifest and a 300 KB file of its own; four of them do not fit in the space left.
    const events: BundleEvent[] = nodes.map((node) => {
      const manifest = `{"node":"${node.id}"}`;
      const big = `# ${node.id}\n${'x'.repeat(300_000)}`;
      return {
        schemaVersion: 1,
        type: 'node.bundle',
        nodeId: node.id,
        revision: 1,
        committedAt: '2026-11-24T00:00:00.000Z',
        generatedAt: '2026-11-24T00:00:01.000Z',
        hash: `sha256:${sha256(manifest + big)}`,
        files: [{ path: 'rules/big.cf', sha256: sha256(big) }],
        manifestSha256: sha256(manifest),
      };
    });
    await cache.putBlobs(
      events.flatMap((event) => [
        { sha256: event.manifestSha256 ?? '', content: `{"node":"${event.nodeId}"}` },
        { sha256: event.files[0]?.sha256 ?? '', content: `# ${event.nodeId}\n${'x'.repeat(300_000)}` },
      ]),
    );
    disk.fill(500_000);
    const received = events.map((event) => ({ event, receivedAt: Date.now() }));

    await expect(distributor.bundles(received)).rejects.toMatchObject({ code: 'ENOSPC' });
    expect(await health.readiness.check()).toMatchObject({
      ready: false,
      reason: expect.stringMatching(/^the disk is full: writes of blobs fail since/),
    });
    for (const node of nodes) expect(log.latest(node.id)).toBeUndefined();

    // Nothing torn: reopened, the files need no repair and hold whole blobs only.
    await log.close();
    blobs.close();
    const reopenedHealth = new DiskHealth();
    const reopenedBlobs = await BlobDirectory.open(join(disk.path, 'blobs'), { health: reopenedHealth });
    expect(reopenedHealth.repaired).toEqual([]);
    for (const digest of reopenedBlobs.digests())
      expect(sha256((await reopenedBlobs.read(digest)).toString())).toBe(digest);
    reopenedBlobs.close();

    ({ log, blobs } = await open());
    distributor = distributorOn();
    await distributor.start();
    disk.free();
    await distributor.bundles(received);
    for (const event of events) expect(log.latest(event.nodeId)?.bundle?.hash).toBe(event.hash);
    expect(await health.readiness.check()).toMatchObject({ ready: true });
    await log.close();
    blobs.close();
  });
});
