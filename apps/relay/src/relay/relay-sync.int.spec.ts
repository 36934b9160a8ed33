import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { eventually } from '@policygen/testing-infra';
import type { RelayService } from '../app/relay-service';
import { startRelay } from '../app/relay-service';
import {
  TestRoot,
  bearer,
  digestOf,
  fetchBundle,
  files,
  metricOf,
  nodeToken,
  relayToken,
} from '../testing/test-root';

const metric = (relay: RelayService, kind: string): Promise<number> =>
  metricOf(relay, `policygen_relay_parent_requests_total{kind="${kind}"}`);

describe('a relay syncing from its parent in batches', () => {
  let directory: string;
  let root: TestRoot;
  let relay: RelayService | null = null;
  // Blobs only by request (`inlineBytes: 0`): what these tests count; the last one gives them with pages.
  const startEu = async (inlineBytes = 0): Promise<RelayService> => {
    const started = await startRelay({
      relayId: 'eu',
      parentUrl: root.url,
      relayToken: relayToken('eu'),
      dataDir: join(directory, 'relay-eu'),
      logger: pino({ level: 'silent' }),
      pollWaitMs: 200,
      inlineBytes,
    });
    await started.app.listen(0, '127.0.0.1');
    return started;
  };
  const synced = (service: RelayService) => () => service.follower.status().cursor >= root.log.cursor;

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), 'policygen-relay-sync-'));
    root = await TestRoot.start(join(directory, 'root'));
  });
  afterAll(async () => {
    await relay?.stop();
    await root.stop();
    rmSync(directory, { recursive: true, force: true });
  });

  it('applies a page of 1,200 nodes with a few batched blob requests, and confirms the page', async () => {
    const nodes = Array.from({ length: 1_200 }, (_, index) => index);
    await root.publish(nodes, 1);
    relay = await startEu();
    const eu = relay;
    await eventually(synced(eu), { what: 'relay eu synced', timeoutMs: 60_000 });
    // 3 blobs of its own per node and 3 shared: 3,603 blobs in ceil(3,603 / 500) requests.
    expect(eu.follower.status()).toMatchObject({ nodes: 1_200, blobs: 3_603, blobFetches: 3_603 });
    expect(await metric(eu, 'blobs')).toBe(8);
    await eventually(() => root.confirmations.flat().length >= 1_200, { what: 'the page confirmed' });
    expect(root.confirmations[0]).toHaveLength(1_200);
    expect(root.confirmations[0]?.[0]).toMatchObject({ relayId: 'eu', nodeId: 'node-0', revision: 1 });

    const served = await fetchBundle(eu, 7);
    expect(served.status).toBe(200);
    expect(served.files).toEqual(new Map(files(7, 1).map(({ path, content }) => [path, content])));
    const stamp = await fetch(`${await eu.app.getUrl()}/nodes/node-7/rudder-promises-generated`, {
      headers: bearer(nodeToken('node-7')),
    });
    expect(await stamp.text()).toBe(files(7, 1)[1]?.content);
  });

  it('switches a node to its new bundle, fetching only the changed blobs', async () => {
    const eu = relay as RelayService;
    const before = eu.follower.status().blobFetches;
    await root.publish([7], 2);
    await eventually(synced(eu), { what: 'relay eu synced' });
    expect(eu.follower.status().blobFetches - before).toBe(3);
    expect((await fetchBundle(eu, 7)).files.get('rules/cfengine-community/promises.cf')).toBe(
      'promises of 7 v2\n',
    );
  });

  it('resumes after a restart from the cursor on disk, fetching only what is missing', async () => {
    await relay?.stop();
    await root.publish([8, 9], 2);
    relay = await startEu();
    const eu = relay;
    await eventually(synced(eu), { what: 'relay eu resynced' });
    expect(eu.follower.status()).toMatchObject({ nodes: 1_200, blobFetches: 6 });
    expect((await fetchBundle(eu, 9)).files.get('policy-manifest.json')).toBe('{"node":9,"version":2}\n');
    expect((await fetchBundle(eu, 10)).status).toBe(200);
  });

  it('stops serving a node moved to another relay', async () => {
    const eu = relay as RelayService;
    await root.publish([11], 1, ['root', 'us'], ['root', 'eu']);
    await eventually(synced(eu), { what: 'relay eu synced' });
    expect((await fetchBundle(eu, 11)).status).toBe(401);
    expect(eu.follower.status().nodes).toBe(1_199);
  });

  it('leaves out a node whose files the parent lost, keeping its bundle, and goes on with the others', async () => {
    const eu = relay as RelayService;
    await root.publish([12, 13], 3);
    const lost = digestOf(files(12, 3)[2]?.content ?? '');
    root.blobs.takeTouched();
    expect(await root.blobs.deleteUnlessTouched(lost)).toBe(true);
    await eventually(synced(eu), { what: 'relay eu past the entry it cannot complete' });
    expect((await fetchBundle(eu, 12)).files.get('rules/cfengine-community/promises.cf')).toBe(
      'promises of 12 v1\n',
    );
    expect((await fetchBundle(eu, 13)).files.get('rules/cfengine-community/promises.cf')).toBe(
      'promises of 13 v3\n',
    );
    const text = await (await fetch(`${await eu.app.getUrl()}/metrics`)).text();
    expect(text).toMatch(/^policygen_relay_entries_left_out_total 1$/m);

    // A later entry with files the parent holds brings the node forward again.
    await root.publish([12], 4);
    await eventually(synced(eu), { what: 'relay eu synced' });
    expect((await fetchBundle(eu, 12)).files.get('rules/cfengine-community/promises.cf')).toBe(
      'promises of 12 v4\n',
    );
  });

  it('takes a node change in one request when the parent gives its new blobs with the page', async () => {
    await relay?.stop();
    relay = await startEu(2 ** 20);
    const eu = relay;
    await eventually(synced(eu), { what: 'relay eu synced' });
    const requests = async (): Promise<number> => (await metric(eu, 'feed')) + (await metric(eu, 'blobs'));
    const before = { requests: await requests(), blobRequests: await metric(eu, 'blobs') };
    const fetched = eu.follower.status().blobFetches;
    await root.publish([14], 5);
    await eventually(synced(eu), { what: 'relay eu synced' });
    expect(await metric(eu, 'blobs')).toBe(before.blobRequests);
    // The page that brought it, and the long poll that follows.
    expect((await requests()) - before.requests).toBeLessThanOrEqual(2);
    expect(eu.follower.status().blobFetches - fetched).toBe(3);
    expect((await fetchBundle(eu, 14)).files).toEqual(
      new Map(files(14, 5).map(({ path, content }) => [path, content])),
    );
  });
});
