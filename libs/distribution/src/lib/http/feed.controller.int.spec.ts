import 'reflect-metadata';
import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Module } from '@nestjs/common';
import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import pino from 'pino';
import { Registry } from 'prom-client';
import { extract } from 'tar-stream';
import { ServiceShellModule } from '@policygen/service-kit';
import { BlobDirectory } from '../disk/blob-directory';
import { FeedLog } from '../disk/feed-log';
import type { Confirmation, FeedPage } from '../feed';
import { issueRelayToken } from '../relay-token';
import { deploymentAuthenticator, RELAY_DIRECTORY, TopologyRelayDirectory } from './feed-access';
import {
  BLOB_DIRECTORY,
  CONFIRMATION_SINK,
  FEED_LOG,
  FeedController,
  MAX_BLOB_BATCH,
} from './feed.controller';

const digestOf = (content: string): string => createHash('sha256').update(content).digest('hex');
const SECRET = 'a-deployment-secret-long-enough';
const AT = '2026-11-24T10:00:00.000Z';
const ROOT_CREDENTIAL = { authorization: `Bearer ${issueRelayToken(SECRET, 'root')}` };

async function untar(body: ArrayBuffer): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  const unpack = extract();
  const done = (async () => {
    for await (const entry of unpack) {
      const chunks: Buffer[] = [];
      for await (const chunk of entry) chunks.push(chunk as Buffer);
      files.set(entry.header.name, Buffer.concat(chunks).toString());
    }
  })();
  unpack.end(Buffer.from(body));
  await done;
  return files;
}

describe('FeedController: blobs over HTTP', () => {
  let directory: string;
  let app: INestApplication;
  let url: string;
  const confirmed: Confirmation[] = [];
  let log: FeedLog;
  let blobs: BlobDirectory;
  const contents = Array.from({ length: 700 }, (_, index) => `blob ${index}\n${'z'.repeat(index * 37)}`);

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), 'policygen-feed-http-'));
    log = await FeedLog.open(join(directory, 'feed.jsonl'));
    blobs = await BlobDirectory.open(join(directory, 'blobs'));
    await blobs.writeMany(contents.map((content) => ({ sha256: digestOf(content), content })));
    // One bundle naming them all, served by root: what makes them readable to relay root.
    await log.append([
      {
        seq: 1,
        nodeId: 'n1',
        path: ['root'],
        previousPath: [],
        revision: 1,
        bundle: {
          hash: `sha256:${digestOf('n1')}`,
          revision: 1,
          committedAt: AT,
          generatedAt: AT,
          distributedAt: AT,
          files: contents.map((content, index) => ({ path: `file-${index}`, sha256: digestOf(content) })),
          nodeKey: null,
        },
      },
    ]);
    @Module({
      imports: [
        ServiceShellModule.forRoot({
          service: 'feed-test',
          logger: pino({ level: 'silent' }),
          registry: new Registry(),
          readiness: () => [],
          status: () => ({}),
          authenticator: deploymentAuthenticator(SECRET),
        }),
      ],
      controllers: [FeedController],
      providers: [
        { provide: FEED_LOG, useValue: log },
        { provide: BLOB_DIRECTORY, useValue: blobs },
        {
          provide: CONFIRMATION_SINK,
          useValue: {
            confirm: async (given: readonly Confirmation[]) => {
              confirmed.push(...given);
            },
          },
        },
        { provide: RELAY_DIRECTORY, useValue: new TopologyRelayDirectory(SECRET, () => null) },
      ],
    })
    class TestModule {}
    app = await NestFactory.create(TestModule, { logger: false });
    await app.listen(0, '127.0.0.1');
    url = await app.getUrl();
  });
  afterAll(async () => {
    await log.close();
    await app.close();
    rmSync(directory, { recursive: true, force: true });
  });

  const post = (body: unknown) =>
    fetch(`${url}/blobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...ROOT_CREDENTIAL },
      body: JSON.stringify(body),
    });

  it('streams many blobs in one tar, entries named by digest, in the order asked, each once', async () => {
    const asked = [...contents.slice(100, 600), contents[100] ?? ''].map(digestOf);
    const response = await post({ digests: asked });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/x-tar');
    const files = await untar(await response.arrayBuffer());
    expect([...files.keys()]).toEqual(asked.slice(0, 500));
    for (const [digest, content] of files) expect(digestOf(content)).toBe(digest);
  });

  it('answers 404 naming the unknown digests, before sending anything', async () => {
    const unknown = [digestOf('not here'), digestOf('nor here')];
    const response = await post({ digests: [digestOf(contents[0] ?? ''), ...unknown] });
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ missing: unknown });
  });

  it('answers 400 naming the field for a malformed request', async () => {
    const cases: [unknown, string][] = [
      [{}, '$.digests'],
      [{ digests: [] }, '$.digests'],
      [{ digests: [digestOf('a'), 'ABC'] }, '$.digests.1'],
      [{ digests: Array.from({ length: MAX_BLOB_BATCH + 1 }, () => digestOf('a')) }, '$.digests'],
    ];
    for (const [body, path] of cases) {
      const response = await post(body);
      expect({ body: JSON.stringify(body).slice(0, 40), status: response.status }).toEqual({
        body: JSON.stringify(body).slice(0, 40),
        status: 400,
      });
      const answer = (await response.json()) as { issues: { path: string }[] };
      expect(answer.issues.map((issue) => issue.path)).toContain(path);
    }
  });

  it('still serves one blob by digest, 404 for an unknown one, 400 for a malformed one', async () => {
    const content = contents[42] ?? '';
    const one = await fetch(`${url}/blobs/${digestOf(content)}`, { headers: ROOT_CREDENTIAL });
    expect(one.status).toBe(200);
    expect(one.headers.get('etag')).toBe(`"${digestOf(content)}"`);
    expect(await one.text()).toBe(content);
    expect((await fetch(`${url}/blobs/${digestOf('absent')}`, { headers: ROOT_CREDENTIAL })).status).toBe(
      404,
    );
    expect((await fetch(`${url}/blobs/nothex`, { headers: ROOT_CREDENTIAL })).status).toBe(400);
  });

  it('takes the confirmations of the page before with a page request, then serves the page; refuses bad ones', async () => {
    const confirmation = (nodeId: string, relayId = 'root'): Confirmation => ({
      relayId,
      nodeId,
      hash: `sha256:${digestOf(nodeId)}`,
      revision: 1,
      committedAt: AT,
      generatedAt: AT,
      distributedAt: AT,
      confirmedAt: AT,
    });
    const pageWith = (body: unknown) =>
      fetch(`${url}/feeds/root?after=0&waitMs=0`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...ROOT_CREDENTIAL },
        body: JSON.stringify(body),
      });
    confirmed.length = 0;
    const answer = await pageWith({ confirmations: [confirmation('n1')] });
    expect(answer.status).toBe(200);
    expect(((await answer.json()) as FeedPage).entries.map((entry) => entry.nodeId)).toContain('n1');
    expect(confirmed).toEqual([confirmation('n1')]);

    const undated = await pageWith({ confirmations: [{ ...confirmation('n1'), confirmedAt: 'yesterday' }] });
    expect(undated.status).toBe(400);
    expect(await undated.json()).toMatchObject({ issues: [{ path: '$.confirmations.0.confirmedAt' }] });
    expect((await pageWith({ confirmations: [confirmation('n1', 'elsewhere')] })).status).toBe(403);
    expect(confirmed).toHaveLength(1);
  });

  it('gives with a page, when asked, the small blobs new with its bundles, within the asked bytes', async () => {
    const own = 'a blob of n2 alone\n';
    await blobs.writeMany([{ sha256: digestOf(own), content: own }]);
    await log.append([
      {
        seq: 2,
        nodeId: 'n2',
        path: ['root'],
        previousPath: [],
        revision: 1,
        bundle: {
          hash: `sha256:${digestOf('n2')}`,
          revision: 1,
          committedAt: AT,
          generatedAt: AT,
          distributedAt: AT,
          // contents[0] is n1's too: new with n1's entry, not with this one.
          files: [
            { path: 'own', sha256: digestOf(own) },
            { path: 'shared', sha256: digestOf(contents[0] ?? '') },
          ],
          nodeKey: null,
        },
      },
    ]);
    const page = async (query: string): Promise<FeedPage> =>
      (await (
        await fetch(`${url}/feeds/root?after=0${query}`, { headers: ROOT_CREDENTIAL })
      ).json()) as FeedPage;
    expect((await page('')).blobs).toBeUndefined();
    const given = (await page('&inlineBytes=200000')).blobs ?? {};
    const sizes = Object.entries(given).map(([digest, base64]) => {
      const content = Buffer.from(base64, 'base64');
      expect(digestOf(content.toString())).toBe(digest);
      return content.length;
    });
    expect(given[digestOf(own)]).toBe(Buffer.from(own).toString('base64'));
    // Shared with n2, it comes once, with the entry that named it first.
    expect(given[digestOf(contents[0] ?? '')]).toBe(Buffer.from(contents[0] ?? '').toString('base64'));
    const afterN1 = (await (
      await fetch(`${url}/feeds/root?after=1&inlineBytes=200000`, { headers: ROOT_CREDENTIAL })
    ).json()) as FeedPage;
    // From n2 on, the relay holds it already (it had n1's page): it is not given again.
    expect(Object.keys(afterN1.blobs ?? {})).toEqual([digestOf(own)]);
    expect(sizes.reduce((sum, size) => sum + size, 0)).toBeLessThanOrEqual(200_000);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(16 * 1024);
    expect(sizes.length).toBeGreaterThan(10);
    const response = await fetch(`${url}/feeds/root?after=0&inlineBytes=-1`, { headers: ROOT_CREDENTIAL });
    expect(response.status).toBe(400);
  });

  it('goes on serving when readers go away mid-tar (a relay killed mid-sync), at any moment of the stream', async () => {
    const body = JSON.stringify({ digests: contents.slice(0, 500).map(digestOf) });
    // Each reader hangs up after its n-th chunk: the archive is cut while entries are pending.
    for (let chunks = 1; chunks <= 40; chunks += 3)
      await new Promise<void>((resolve, reject) => {
        const outgoing = request(`${url}/blobs`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...ROOT_CREDENTIAL },
        });
        outgoing.on('response', (incoming) => {
          let seen = 0;
          incoming.on('data', () => {
            if (++seen === chunks) outgoing.destroy();
          });
          incoming.on('end', resolve);
        });
        outgoing.on('close', resolve);
        outgoing.on('error', (error) =>
          (error as NodeJS.ErrnoException).code === 'ECONNRESET' ? resolve() : reject(error),
        );
        outgoing.end(body);
      });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const response = await post({ digests: contents.slice(0, 500).map(digestOf) });
    expect(response.status).toBe(200);
    expect((await untar(await response.arrayBuffer())).size).toBe(500);
  });
});
