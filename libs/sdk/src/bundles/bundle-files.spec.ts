import { createHash } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { BundleEvent } from '../contract/schemas';
import { BlobFetchError, BundleFiles, MANIFEST_PATH } from './bundle-files';

const sha = (text: string) => createHash('sha256').update(text).digest('hex');

describe('BundleFiles', () => {
  const blobs = new Map<string, string>([
    [sha('bundle common'), 'bundle common'],
    [sha('{"manifest": true}'), '{"manifest": true}'],
  ]);
  const lying = sha('what was asked for');
  const late = sha('arrives late');
  const requests: { url: string; authorization: string | undefined }[] = [];
  let lateAsks = 0;
  let server: Server;
  let url: string;

  beforeAll(async () => {
    server = createServer((request, response) => {
      requests.push({ url: request.url ?? '', authorization: request.headers.authorization });
      const digest = /^\/distribution\/blobs\/([0-9a-f]{64})$/.exec(request.url ?? '')?.[1];
      if (request.headers.authorization !== 'Bearer s3cret') response.writeHead(401).end();
      else if (digest === lying) response.end('something else');
      else if (digest === late && ++lateAsks < 3) response.writeHead(404).end();
      else if (digest === late) response.end('arrives late');
      else if (digest && blobs.has(digest)) response.end(blobs.get(digest));
      else response.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/distribution/`;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  const files = (token = 's3cret') => new BundleFiles({ url, token, attempts: 3, retryDelayMs: 1 });

  it("fetches a bundle's files and its manifest by digest, with the token", async () => {
    const event: BundleEvent = {
      schemaVersion: 1,
      type: 'node.bundle',
      nodeId: 'n1',
      revision: 3,
      committedAt: '2026-11-24T10:00:00.000Z',
      hash: `sha256:${'ab'.repeat(32)}`,
      files: [{ path: 'rules/cfengine-community/common.cf', sha256: sha('bundle common') }],
      manifestSha256: sha('{"manifest": true}'),
    };
    const bundle = await files().bundle(event);
    expect(Object.fromEntries([...bundle].map(([path, contents]) => [path, contents.toString()]))).toEqual({
      'rules/cfengine-community/common.cf': 'bundle common',
      [MANIFEST_PATH]: '{"manifest": true}',
    });
    expect(requests.every((request) => request.authorization === 'Bearer s3cret')).toBe(true);
    expect(requests[0]?.url).toBe(`/distribution/blobs/${sha('bundle common')}`);
  });

  it('asks again for a blob that is not there yet', async () => {
    expect((await files().blob(late)).toString()).toBe('arrives late');
    expect(lateAsks).toBe(3);
  });

  it('refuses contents that do not match their digest, and a refused token at once', async () => {
    await expect(files().blob(lying)).rejects.toThrow(/the contents served have the digest/);
    const before = requests.length;
    await expect(files('wrong').blob(sha('bundle common'))).rejects.toMatchObject({
      name: 'BlobFetchError',
      status: 401,
      message: expect.stringContaining('check the token'),
    });
    expect(requests.length - before).toBe(1);
    await expect(files().blob('nope')).rejects.toBeInstanceOf(BlobFetchError);
  });
});
