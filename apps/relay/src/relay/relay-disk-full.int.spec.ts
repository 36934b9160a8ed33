import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { BlobDirectory, DiskHealth, FeedLog } from '@policygen/distribution';
import { SmallDisk, eventually } from '@policygen/testing-infra';
import type { RelayService } from '../app/relay-service';
import { startRelay } from '../app/relay-service';
import { TestRoot, digestOf, fetchBundle, files, metricOf, relayToken } from '../testing/test-root';

/** A relay whose data directory is a small tmpfs that fills up while it syncs. */
describe('a relay on a disk that fills up', () => {
  let directory: string;
  let disk: SmallDisk;
  let root: TestRoot;
  let relay: RelayService | null = null;
  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), 'policygen-relay-full-'));
    disk = SmallDisk.mount(4 * 2 ** 20);
    root = await TestRoot.start(join(directory, 'root'));
  });
  afterAll(async () => {
    await relay?.stop();
    await root.stop();
    disk.unmount();
    rmSync(directory, { recursive: true, force: true });
  });

  it('says so (readiness, metrics), keeps serving what it has, leaves nothing torn, and catches up by itself once space is back', async () => {
    await root.publish([1, 2], 1);
    relay = await startRelay({
      relayId: 'eu',
      parentUrl: root.url,
      relayToken: relayToken('eu'),
      dataDir: disk.path,
      logger: pino({ level: 'silent' }),
      pollWaitMs: 200,
    });
    const eu = relay;
    await eu.app.listen(0, '127.0.0.1');
    const url = await eu.app.getUrl();
    await eventually(() => eu.follower.status().cursor >= root.log.cursor, { what: 'relay eu synced' });

    disk.fill(200_000);
    // Node 3's bundle holds a 500 KB file: more than the space left.
    const big = `# node 3\n${'x'.repeat(500_000)}`;
    await root.publish([3], 2, ['root', 'eu'], [], [{ path: 'rules/big.cf', content: big }]);

    await eventually(
      async () => {
        const answer = await (await fetch(`${url}/health/ready`)).json();
        return /the disk is full/.test(JSON.stringify(answer));
      },
      { what: 'readiness saying the disk is full' },
    );
    expect(await metricOf(eu, 'policygen_disk_full{store="blobs"}')).toBe(1);
    expect(
      await metricOf(eu, 'policygen_disk_write_failures_total{store="blobs",code="ENOSPC"}'),
    ).toBeGreaterThan(0);
    expect(eu.follower.status().lastError).toMatch(/ENOSPC/);
    expect((await fetchBundle(eu, 1)).files.get('policy-manifest.json')).toBe(files(1, 1)[0]?.content);
    expect((await fetchBundle(eu, 3)).status).toBe(401);

    // Nothing torn: the files a crash now would leave need no repair.
    const health = new DiskHealth();
    const blobs = await BlobDirectory.open(join(disk.path, 'blobs'), { health });
    const log = await FeedLog.open(join(disk.path, 'feed.jsonl'), { health });
    for (const digest of blobs.digests())
      expect(digestOf((await blobs.read(digest)).toString())).toBe(digest);
    expect(health.repaired).toEqual([]);
    expect(log.latest('node-3')).toBeUndefined();
    await log.close();
    blobs.close();

    disk.free();
    await eventually(() => eu.follower.status().cursor >= root.log.cursor, {
      what: 'relay eu caught up once space is back',
      timeoutMs: 30_000,
    });
    const served = await fetchBundle(eu, 3);
    expect(served.files.get('rules/big.cf')).toBe(big);
    expect(await metricOf(eu, 'policygen_disk_full{store="blobs"}')).toBe(0);
    const ready = (await (await fetch(`${url}/health/ready`)).json()) as {
      details: Record<string, { status: string }>;
    };
    expect(ready.details['disk']).toMatchObject({ status: 'up' });
  });
});
