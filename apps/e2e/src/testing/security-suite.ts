import { HOSTILE_SEGMENTS, LEAKED_FILE, rawRequest } from './security-probes';

/** A running Policygen, as the security suite attacks it: every service's address, and the admin's token. */
export interface SecurityTarget {
  readonly configUrl: string;
  readonly distributionUrl: string;
  /** Relay `root`'s address. */
  readonly relayUrl: string;
  readonly adminToken: string;
  /** The fleet is the demo fleet: web-par-001 and db-par-001 exist, relays root, relay-eu and relay-us. */
  stop(): Promise<void>;
}

interface CreatedToken {
  readonly id: string;
  readonly token: string;
}

const SHA = 'a'.repeat(64);

/**
 * Issue 17's security suite, the same for the services as processes and for `policygen start`:
 * each attempt is answered by the right 4xx, and the configuration is unchanged afterwards.
 */
export function describeSecuritySuite(
  name: string,
  start: () => Promise<SecurityTarget>,
  timeoutMs: number,
): void {
  describe(`security: ${name}`, () => {
    let target: SecurityTarget;
    let before: { revision: string | null; body: string };

    const config = (method: string, path: string, token?: string, body?: unknown) =>
      rawRequest(target.configUrl, method, path, {
        ...(token === undefined ? {} : { token }),
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    const createToken = async (body: Record<string, unknown>): Promise<CreatedToken> => {
      const created = await config('POST', '/api/v1/api-tokens', target.adminToken, body);
      if (created.status !== 201) throw new Error(`no token: ${created.status} ${created.text}`);
      return JSON.parse(created.text) as CreatedToken;
    };
    const exported = async () => {
      const answer = await config('GET', '/api/v1/export', target.adminToken);
      return { revision: String(answer.headers['etag'] ?? null), body: answer.text };
    };

    beforeAll(async () => {
      target = await start();
      before = await exported();
    }, timeoutMs);
    afterAll(async () => {
      await target?.stop();
    }, 60_000);

    it('refuses anonymous callers on every service: 401 with a Bearer challenge', async () => {
      const attempts: [string, string, string, unknown?][] = [
        [target.configUrl, 'GET', '/api/v1/nodes'],
        [target.configUrl, 'GET', '/api/v1/export'],
        [target.configUrl, 'POST', '/api/v1/changes', { delete: { nodes: ['web-par-001'] } }],
        [target.configUrl, 'POST', '/api/v1/import', {}],
        [target.configUrl, 'PUT', '/api/v1/nodes/db-par-001', { id: 'db-par-001', hostname: 'owned' }],
        [target.configUrl, 'POST', '/api/v1/nodes/db-par-001/token', {}],
        [target.configUrl, 'POST', '/api/v1/api-tokens', { name: 'mallory', role: 'admin' }],
        [target.distributionUrl, 'GET', '/feeds/root'],
        [target.distributionUrl, 'GET', `/blobs/${SHA}`],
        [target.distributionUrl, 'POST', '/blobs', { digests: [SHA] }],
        [target.distributionUrl, 'POST', '/feeds/root/confirmations', { confirmations: [] }],
        [target.distributionUrl, 'POST', '/feeds/root', { confirmations: [] }],
        [target.relayUrl, 'GET', '/feeds/relay-eu'],
        [target.relayUrl, 'GET', `/blobs/${SHA}`],
        [target.relayUrl, 'POST', '/feeds/relay-eu/confirmations', { confirmations: [] }],
        [target.relayUrl, 'POST', '/feeds/relay-eu', { confirmations: [] }],
        [target.relayUrl, 'GET', '/nodes/web-par-001/policies'],
      ];
      const answers = [];
      for (const [base, method, path, body] of attempts) {
        const answer = await rawRequest(
          base,
          method,
          path,
          body === undefined ? {} : { body: JSON.stringify(body) },
        );
        answers.push({
          call: `${method} ${base === target.configUrl ? 'config' : base === target.relayUrl ? 'relay' : 'distribution'}${path}`,
          status: answer.status,
          challenge: /^Bearer/.test(String(answer.headers['www-authenticate'] ?? '')),
        });
      }
      expect(answers).toEqual(answers.map(({ call }) => ({ call, status: 401, challenge: true })));
    });

    it("refuses a reader's token every write, and a node's token the config API", async () => {
      const reader = await createToken({ name: 'security-reader', role: 'reader' });
      const writes: [string, string, unknown][] = [
        ['POST', '/api/v1/changes', { delete: { nodes: ['web-par-001'] } }],
        ['POST', '/api/v1/import', {}],
        ['PUT', '/api/v1/nodes/db-par-001', { id: 'db-par-001', hostname: 'owned.example' }],
        ['DELETE', '/api/v1/nodes/web-par-001', undefined],
        ['PUT', '/api/v1/settings', {}],
        ['POST', '/api/v1/parameters', { name: 'owned', value: 1 }],
        ['POST', '/api/v1/api-tokens', { name: 'mallory', role: 'admin' }],
        ['POST', '/api/v1/nodes/db-par-001/token', {}],
      ];
      for (const [method, path, body] of writes)
        expect({ method, path, status: (await config(method, path, reader.token, body)).status }).toEqual({
          method,
          path,
          status: 403,
        });
      const node = JSON.parse(
        (await config('POST', '/api/v1/nodes/db-par-001/token', target.adminToken, {})).text,
      ) as {
        token: string;
      };
      expect(
        (
          await config('PUT', '/api/v1/nodes/web-par-001', node.token, {
            id: 'web-par-001',
            hostname: 'x.example',
          })
        ).status,
      ).toBe(401);
      expect((await config('GET', '/api/v1/export', node.token)).status).toBe(401);
    });

    it('refuses a revoked token at once and an expired one once its time has come', async () => {
      const revoked = await createToken({ name: 'security-revoked', role: 'editor' });
      expect((await config('GET', '/api/v1/nodes/web-par-001', revoked.token)).status).toBe(200);
      expect((await config('DELETE', `/api/v1/api-tokens/${revoked.id}`, target.adminToken)).status).toBe(
        200,
      );
      expect((await config('GET', '/api/v1/nodes/web-par-001', revoked.token)).status).toBe(401);
      expect(
        (await config('POST', '/api/v1/changes', revoked.token, { delete: { nodes: ['web-par-001'] } }))
          .status,
      ).toBe(401);
      const expiring = await createToken({
        name: 'security-expiring',
        role: 'editor',
        expiresAt: new Date(Date.now() + 1_000).toISOString(),
      });
      await new Promise((resolve) => setTimeout(resolve, 1_200));
      expect(
        (await config('POST', '/api/v1/changes', expiring.token, { delete: { nodes: ['web-par-001'] } }))
          .status,
      ).toBe(401);
    });

    it('answers path traversal on every path parameter of the config API with a 4xx, and reads no file', async () => {
      const document = JSON.parse((await config('GET', '/api/docs-json')).text) as {
        paths: Record<string, Record<string, unknown>>;
      };
      const probed: string[] = [];
      const wrong: string[] = [];
      for (const [template, item] of Object.entries(document.paths)) {
        if (!template.includes('{')) continue;
        for (const method of ['get', 'put', 'post', 'delete', 'patch'].filter((verb) => verb in item))
          for (const segment of HOSTILE_SEGMENTS) {
            const path = template.replace(/\{[^}]+\}/g, segment);
            const answer = await config(
              method.toUpperCase(),
              path,
              target.adminToken,
              method === 'get' || method === 'delete' ? undefined : {},
            );
            probed.push(`${method} ${template}`);
            if (answer.status < 400 || answer.status >= 500 || LEAKED_FILE.test(answer.text))
              wrong.push(
                `${method.toUpperCase()} ${path.slice(0, 120)} → ${answer.status} ${answer.text.slice(0, 120)}`,
              );
          }
      }
      expect(new Set(probed).size).toBeGreaterThan(20);
      expect(wrong).toEqual([]);
    });

    it('answers oversized, malformed, deeply nested and mistyped bodies with 413, 400 and 415', async () => {
      const send = (body: string | Buffer, contentType = 'application/json') =>
        rawRequest(target.configUrl, 'POST', '/api/v1/changes', {
          token: target.adminToken,
          body,
          contentType,
        });
      expect((await send(Buffer.alloc(65 * 1024 * 1024, 0x20))).status).toBe(413);
      expect((await send('{"upsert": {"nodes": [')).status).toBe(400);
      expect((await send(`${'['.repeat(5_000)}${']'.repeat(5_000)}`)).status).toBe(400);
      const deep = await send(
        JSON.stringify({
          upsert: { parameters: { deep: JSON.parse(`${'{"a":'.repeat(200)}1${'}'.repeat(200)}`) } },
        }),
      );
      expect(deep.status).toBe(400);
      expect(deep.text).toContain('$.upsert.parameters.deep');
      expect((await send('<changes/>', 'application/xml')).status).toBe(415);
      const nul = await send(JSON.stringify({ upsert: { nodes: [{ id: 'evil', hostname: 'a\u0000b' }] } }));
      expect(nul.status).toBe(400);
      expect(nul.text).toContain('$.upsert.nodes[0].hostname');
    });

    const issued = async (path: string): Promise<string> => {
      const answer = await config('POST', path, target.adminToken, {});
      if (answer.status !== 200) throw new Error(`POST ${path}: ${answer.status} ${answer.text}`);
      return (JSON.parse(answer.text) as { token: string }).token;
    };
    /** The digests of a node's files, as its relay lists them to the node. */
    const digestsOf = async (nodeId: string, token: string): Promise<string[]> => {
      const answer = await fetch(`${target.relayUrl}/nodes/${nodeId}/policies`, {
        headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
      });
      expect({ nodeId, status: answer.status }).toEqual({ nodeId, status: 200 });
      return ((await answer.json()) as { files: { sha256: string }[] }).files.map((file) => file.sha256);
    };

    it("refuses a relay another relay's feed and confirmations, and forged or undated confirmations", async () => {
      const eu = await issued('/api/v1/relays/relay-eu/token');
      const us = await issued('/api/v1/relays/relay-us/token');
      const feed = (token: string, relayId: string) =>
        rawRequest(target.distributionUrl, 'GET', `/feeds/${relayId}`, { token });
      expect((await feed(eu, 'relay-eu')).status).toBe(200);
      expect((await feed(eu, 'relay-us')).status).toBe(403);
      expect((await feed(eu, 'root')).status).toBe(403);
      expect((await feed(us, 'relay-eu')).status).toBe(403);
      // A credential made up for a relay id is no credential.
      expect((await feed('relay.relay-eu.' + 'A'.repeat(43), 'relay-eu')).status).toBe(401);
      const confirm = (token: string, relayId: string, confirmation: Record<string, unknown>) =>
        rawRequest(target.distributionUrl, 'POST', `/feeds/${relayId}/confirmations`, {
          token,
          body: JSON.stringify({ confirmations: [confirmation] }),
        });
      const at = new Date().toISOString();
      const forged = {
        relayId: 'relay-ghost',
        nodeId: 'web-par-001',
        hash: 'sha256:' + '0'.repeat(64),
        revision: 1,
        committedAt: '1999-01-01T00:00:00.000Z',
        generatedAt: at,
        distributedAt: at,
        confirmedAt: at,
      };
      expect((await confirm(eu, 'relay-eu', forged)).status).toBe(403);
      expect((await confirm(eu, 'relay-us', { ...forged, relayId: 'relay-us' })).status).toBe(403);
      const undated = await confirm(eu, 'relay-eu', {
        ...forged,
        relayId: 'relay-eu',
        confirmedAt: 'not a date',
      });
      expect(undated.status).toBe(400);
      expect(undated.text).toContain('confirmedAt');
    });

    it("refuses a node another node's bundle and blobs, and a guessed digest", async () => {
      const web = await issued('/api/v1/nodes/web-par-001/token');
      const db = await issued('/api/v1/nodes/db-par-001/token');
      expect(
        (await rawRequest(target.relayUrl, 'GET', '/nodes/web-par-001/policies', { token: db })).status,
      ).toBe(403);
      const webBlobs = await digestsOf('web-par-001', web);
      const dbBlobs = new Set(await digestsOf('db-par-001', db));
      const onlyWeb = webBlobs.find((digest) => !dbBlobs.has(digest));
      expect(onlyWeb).toBeDefined();
      const blob = (token: string, digest: string) =>
        rawRequest(target.distributionUrl, 'GET', `/blobs/${digest}`, { token });
      expect((await blob(web, String(onlyWeb))).status).toBe(200);
      expect((await blob(db, String(onlyWeb))).status).toBe(403);
      expect((await blob(web, 'f'.repeat(64))).status).toBe(403);
      const batch = await rawRequest(target.distributionUrl, 'POST', '/blobs', {
        token: db,
        body: JSON.stringify({ digests: [String(onlyWeb)] }),
      });
      expect(batch.status).toBe(403);
      // A node's token is not a relay's: no feed.
      expect((await rawRequest(target.distributionUrl, 'GET', '/feeds/root', { token: web })).status).toBe(
        403,
      );
    });

    it('answers path traversal on the path parameters of the distribution-service and the relay with a 4xx', async () => {
      const root = await issued('/api/v1/relays/root/token');
      const web = await issued('/api/v1/nodes/web-par-001/token');
      const wrong: string[] = [];
      for (const segment of HOSTILE_SEGMENTS)
        for (const [base, method, path, token] of [
          [target.distributionUrl, 'GET', `/feeds/${segment}`, root],
          [target.distributionUrl, 'GET', `/blobs/${segment}`, root],
          [target.relayUrl, 'GET', `/feeds/${segment}`, root],
          [target.relayUrl, 'GET', `/blobs/${segment}`, web],
          [target.relayUrl, 'GET', `/nodes/${segment}/policies`, web],
          [target.relayUrl, 'GET', `/nodes/${segment}/rudder-promises-generated`, web],
        ] as const) {
          const answer = await rawRequest(base, method, path, { token });
          if (answer.status < 400 || answer.status >= 500 || LEAKED_FILE.test(answer.text))
            wrong.push(`${method} ${path.slice(0, 100)} → ${answer.status} ${answer.text.slice(0, 100)}`);
        }
      expect(wrong).toEqual([]);
    });

    it('leaves the configuration as it was: same revision, same export', async () => {
      expect(await exported()).toEqual(before);
    });
  });
}
