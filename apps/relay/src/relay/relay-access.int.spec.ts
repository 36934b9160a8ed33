import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BadRequestException } from '@nestjs/common';
import pino from 'pino';
import type { Confirmation, FeedPage } from '@policygen/distribution';
import { eventually } from '@policygen/testing-infra';
import type { RelayService } from '../app/relay-service';
import { startRelay } from '../app/relay-service';
import {
  AT,
  TestRoot,
  bearer,
  digestOf,
  fetchBundle,
  files,
  metricOf,
  nodeToken,
  relayToken,
} from '../testing/test-root';

/** The unique blob of a node's bundle (its promises), by which its readers are told apart. */
const ownBlobOf = (node: number, version = 1): string => digestOf(files(node, version)[2]?.content ?? '');

function confirmation(relayId: string, nodeId: string, changes: Partial<Confirmation> = {}): Confirmation {
  return {
    relayId,
    nodeId,
    hash: `sha256:${'a'.repeat(64)}`,
    revision: 1,
    committedAt: AT,
    generatedAt: AT,
    distributedAt: AT,
    confirmedAt: AT,
    ...changes,
  };
}

describe('relays and nodes authenticate: each reads only its own subtree or bundle', () => {
  let directory: string;
  let root: TestRoot;
  let eu: RelayService;
  let euParis: RelayService;
  let euUrl: string;

  const startChild = async (relayId: string, parentUrl: string): Promise<RelayService> => {
    const relay = await startRelay({
      relayId,
      parentUrl,
      relayToken: relayToken(relayId),
      dataDir: join(directory, `relay-${relayId}`),
      logger: pino({ level: 'silent' }),
      pollWaitMs: 200,
    });
    await relay.app.listen(0, '127.0.0.1');
    return relay;
  };

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), 'policygen-relay-access-'));
    root = await TestRoot.start(join(directory, 'root'), [
      { id: 'eu', policyServer: 'root' },
      { id: 'eu-par', policyServer: 'eu' },
      { id: 'us', policyServer: 'root' },
    ]);
    await root.publish([1, 2], 1, ['root', 'eu']);
    await root.publish([3], 1, ['root', 'eu', 'eu-par']);
    await root.publish([4], 1, ['root', 'us']);
    eu = await startChild('eu', root.url);
    euUrl = await eu.app.getUrl();
    euParis = await startChild('eu-par', euUrl);
    await eventually(() => euParis.follower.status().nodes === 1, {
      what: 'relay eu-par synced through relay eu',
      timeoutMs: 30_000,
    });
  });
  afterAll(async () => {
    await euParis?.stop();
    await eu?.stop();
    await root?.stop();
    rmSync(directory, { recursive: true, force: true });
  });

  const postJson = (url: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });

  it('answers anonymous callers 401 on feeds, blobs, confirmations and policies, at the root and at a relay', async () => {
    for (const [where, url] of [
      ['root', root.url],
      ['eu', euUrl],
    ] as const) {
      const statuses = {
        where,
        feed: (await fetch(`${url}/feeds/eu-par?waitMs=0`)).status,
        blob: (await fetch(`${url}/blobs/${ownBlobOf(3)}`)).status,
        blobs: (await postJson(`${url}/blobs`, { digests: [ownBlobOf(3)] })).status,
        confirmations: (await postJson(`${url}/feeds/eu-par/confirmations`, { confirmations: [] })).status,
        forged: (
          await fetch(`${url}/feeds/eu-par?waitMs=0`, { headers: bearer(`relay.eu-par.${'x'.repeat(43)}`) })
        ).status,
      };
      expect(statuses).toEqual({ where, feed: 401, blob: 401, blobs: 401, confirmations: 401, forged: 401 });
    }
    expect((await fetch(`${euUrl}/nodes/node-1/policies`)).status).toBe(401);
  });

  it("refuses a relay another relay's feed and confirmations (403)", async () => {
    const us = bearer(relayToken('us'));
    expect((await fetch(`${root.url}/feeds/eu?waitMs=0`, { headers: us })).status).toBe(403);
    expect((await postJson(`${root.url}/feeds/eu/confirmations`, { confirmations: [] }, us)).status).toBe(
      403,
    );
    // A relay below is known to its parent, and still reads only its own feed there.
    const paris = bearer(relayToken('eu-par'));
    expect((await fetch(`${euUrl}/feeds/eu?waitMs=0`, { headers: paris })).status).toBe(403);
    // A node token is no relay credential.
    expect(
      (await fetch(`${euUrl}/feeds/eu-par?waitMs=0`, { headers: bearer(nodeToken('node-3')) })).status,
    ).toBe(403);
  });

  it("gives a relay its own subtree's entries, the credentials of the relays below it, and only their blobs", async () => {
    const credential = bearer(relayToken('eu'));
    const page = (await (
      await fetch(`${root.url}/feeds/eu?waitMs=0`, { headers: credential })
    ).json()) as FeedPage;
    expect(page.entries.map((entry) => entry.nodeId).sort()).toEqual(['node-1', 'node-2', 'node-3']);
    expect(page.relays?.map(({ relayId, path }) => ({ relayId, path }))).toEqual([
      { relayId: 'eu-par', path: ['root', 'eu', 'eu-par'] },
    ]);
    const own = await postJson(`${root.url}/blobs`, { digests: [ownBlobOf(1), ownBlobOf(3)] }, credential);
    expect(own.status).toBe(200);
    await own.arrayBuffer();
    // Another subtree's blob is "not here", exactly as a digest nobody has.
    const guessed = digestOf('a guess');
    const foreign = await postJson(
      `${root.url}/blobs`,
      { digests: [ownBlobOf(1), ownBlobOf(4), guessed] },
      credential,
    );
    expect(foreign.status).toBe(404);
    expect(await foreign.json()).toMatchObject({ missing: [ownBlobOf(4), guessed] });
    expect((await fetch(`${root.url}/blobs/${ownBlobOf(4)}`, { headers: credential })).status).toBe(404);
  });

  it('lets a relay below a relay authenticate to it, and serves that relay its subtree only', async () => {
    expect((await fetchBundle(euParis, 3)).status).toBe(200);
    // Node 1 is served by eu, not by eu-par: its token means nothing there.
    expect((await fetchBundle(euParis, 1)).status).toBe(401);
    expect((await fetchBundle(eu, 1)).status).toBe(200);
    const paris = bearer(relayToken('eu-par'));
    const foreign = await postJson(`${euUrl}/blobs`, { digests: [ownBlobOf(1)] }, paris);
    expect(foreign.status).toBe(404);
    expect(euParis.follower.status().lastError).toBeNull();
  });

  it("lets a node read the blobs its own bundle names, not another node's nor a guessed digest (403)", async () => {
    const node1 = bearer(nodeToken('node-1'));
    const own = await fetch(`${euUrl}/blobs/${ownBlobOf(1)}`, { headers: node1 });
    expect(own.status).toBe(200);
    expect(await own.text()).toBe(files(1, 1)[2]?.content);
    expect((await fetch(`${euUrl}/blobs/${ownBlobOf(2)}`, { headers: node1 })).status).toBe(403);
    expect((await fetch(`${euUrl}/blobs/${digestOf('a guess')}`, { headers: node1 })).status).toBe(403);
    expect((await postJson(`${euUrl}/blobs`, { digests: [ownBlobOf(1), ownBlobOf(2)] }, node1)).status).toBe(
      403,
    );
    // The distribution-service side checks node tokens with the secret, to the same rule.
    expect((await fetch(`${root.url}/blobs/${ownBlobOf(1)}`, { headers: node1 })).status).toBe(200);
    expect((await fetch(`${root.url}/blobs/${ownBlobOf(4)}`, { headers: node1 })).status).toBe(403);
  });

  it("refuses an expired node token (401) and a node's token for another node's policies (403)", async () => {
    expect((await fetchBundle(eu, 1, nodeToken('node-1', new Date(Date.now() - 1_000)))).status).toBe(401);
    const other = await fetch(`${euUrl}/nodes/node-2/policies`, { headers: bearer(nodeToken('node-1')) });
    expect(other.status).toBe(403);
  });

  it('refuses undated confirmations (400 naming the field) and confirmations outside the subtree (403)', async () => {
    const credential = bearer(relayToken('eu'));
    const undated = await postJson(
      `${root.url}/feeds/eu/confirmations`,
      { confirmations: [confirmation('eu', 'node-1', { confirmedAt: 'yesterday' })] },
      credential,
    );
    expect(undated.status).toBe(400);
    expect(await undated.json()).toMatchObject({ issues: [{ path: '$.confirmations.0.confirmedAt' }] });
    for (const outside of [
      confirmation('eu', 'node-4'),
      confirmation('ghost', 'node-1'),
      confirmation('us', 'node-4'),
    ])
      expect(
        (await postJson(`${root.url}/feeds/eu/confirmations`, { confirmations: [outside] }, credential))
          .status,
      ).toBe(403);
    const below = await postJson(
      `${root.url}/feeds/eu/confirmations`,
      { confirmations: [confirmation('eu', 'node-1'), confirmation('eu-par', 'node-3')] },
      credential,
    );
    expect(below.status).toBe(202);
  });

  it('drops a batch its parent refuses with a 4xx, counted, instead of sending it again forever', async () => {
    let refusals = 0;
    root.onConfirmations = async (batch) => {
      if (!batch.some((each) => each.nodeId === 'node-5')) return;
      refusals++;
      throw new BadRequestException('refused for the test');
    };
    await root.publish([5], 1, ['root', 'eu']);
    await eventually(
      async () => (await metricOf(eu, 'policygen_relay_confirmations_dropped_total{status="400"}')) > 0,
      {
        what: 'the refused batch dropped',
      },
    );
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(refusals).toBe(1);
    root.onConfirmations = async () => undefined;
  });

  it('answers path tricks in relay ids, digests and node ids with a 4xx, never a file', async () => {
    const credential = bearer(relayToken('eu'));
    const tricks = [
      await fetch(`${root.url}/feeds/..%2F..%2Fetc%2Fpasswd?waitMs=0`, { headers: credential }),
      await fetch(`${root.url}/feeds/eu%2F..%2Fus?waitMs=0`, { headers: credential }),
      await fetch(`${root.url}/blobs/..%2F..%2Fetc%2Fpasswd`, { headers: credential }),
      await fetch(`${euUrl}/nodes/..%2Fnode-2/policies`, { headers: bearer(nodeToken('node-1')) }),
    ];
    expect(tricks.map((response) => response.status)).toEqual([403, 403, 400, 403]);
  });
});
