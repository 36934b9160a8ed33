import type { ApiClient } from './testing/api-client';
import { smallFleet } from './testing/fixtures';
import { configServiceForSuite } from './testing/running-config-service';

const SERVICE_TOKEN = 'the-services-reader-token-for-these-tests';

interface CreatedToken {
  readonly id: string;
  readonly token: string;
  readonly name: string;
  readonly role: string;
  readonly expiresAt: string | null;
  readonly state: string;
}

describe('config service: API tokens and roles', () => {
  const suite = configServiceForSuite('cs_api_tokens', { serviceToken: SERVICE_TOKEN });
  let reader: ApiClient;
  let editor: ApiClient;
  let admin: ApiClient;

  async function create(body: Record<string, unknown>, as: ApiClient = suite.api): Promise<CreatedToken> {
    const created = await as.post<CreatedToken>('/api/v1/api-tokens', body);
    if (created.status !== 201) throw new Error(`token not created: ${created.status} ${created.text}`);
    return created.body;
  }

  beforeAll(async () => {
    const seeded = await suite.api.post('/api/v1/import', smallFleet());
    if (seeded.status !== 200) throw new Error(`could not import the fleet: ${seeded.text}`);
    reader = suite.api.as((await create({ name: 'dashboards', role: 'reader' })).token);
    editor = suite.api.as((await create({ name: 'ci@example', role: 'editor' })).token);
    admin = suite.api.as((await create({ name: 'alice', role: 'admin', expiresAt: null })).token);
  });

  it('answers 401 with WWW-Authenticate to a request without a credential or with an unknown one', async () => {
    for (const client of [
      suite.api.as(null),
      suite.api.as('pgt_0123456789abcdef_' + 'x'.repeat(43)),
      suite.api.as('nope'),
    ]) {
      const answer = await client.get('/api/v1/nodes');
      expect(answer.status).toBe(401);
      expect(answer.headers.get('www-authenticate') ?? '').toMatch(/^Bearer/);
      expect((await client.put('/api/v1/nodes/n1', { id: 'n1', hostname: 'x' })).status).toBe(401);
    }
    // A token whose secret is wrong by one character is no token.
    const token = editor.token ?? '';
    const tampered = token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A');
    expect((await suite.api.as(tampered).get('/api/v1/nodes')).status).toBe(401);
  });

  it('lets a reader read and nothing else, an editor change the configuration, only an admin manage credentials', async () => {
    expect((await reader.get('/api/v1/nodes/n1')).status).toBe(200);
    expect((await reader.get('/api/v1/export')).status).toBe(200);
    const before = (await reader.get<{ revision: number }>('/api/v1/revision')).body.revision;
    const refused = await reader.post('/api/v1/changes', {
      upsert: { nodes: [{ id: 'n9', hostname: 'n9.example' }] },
    });
    expect(refused.status).toBe(403);
    expect(refused.text).toContain('editor');
    expect((await reader.get<{ revision: number }>('/api/v1/revision')).body.revision).toBe(before);

    const changed = await editor.post('/api/v1/changes', {
      upsert: { nodes: [{ id: 'n9', hostname: 'n9.example' }] },
    });
    expect(changed.status).toBe(200);
    for (const client of [reader, editor]) {
      expect((await client.get('/api/v1/api-tokens')).status).toBe(403);
      expect((await client.post('/api/v1/api-tokens', { name: 'mallory', role: 'admin' })).status).toBe(403);
      expect((await client.post('/api/v1/nodes/n1/token', {})).status).toBe(403);
    }
    expect((await admin.get('/api/v1/api-tokens')).status).toBe(200);
    expect((await reader.get('/api/v1/whoami')).body).toEqual({ name: 'dashboards', role: 'reader' });
  });

  it('accepts the services token of the environment as a reader', async () => {
    const services = suite.api.as(SERVICE_TOKEN);
    expect((await services.get('/api/v1/export')).status).toBe(200);
    expect((await services.get('/api/v1/whoami')).body).toEqual({ name: 'services', role: 'reader' });
    expect((await services.delete('/api/v1/nodes/n9')).status).toBe(403);
  });

  it('lists tokens without their secrets, with who created them, and refuses a name in force', async () => {
    const listed = await admin.get<Record<string, unknown>[]>('/api/v1/api-tokens');
    expect(listed.text).not.toContain(editor.token ?? '-');
    expect(listed.text).not.toContain((editor.token ?? '').slice('pgt_0123456789abcdef_'.length));
    const alice = listed.body.find((token) => token['name'] === 'alice');
    expect(alice).toMatchObject({
      role: 'admin',
      createdBy: 'bootstrap-admin',
      expiresAt: null,
      state: 'active',
    });
    const dashboards = listed.body.find((token) => token['name'] === 'dashboards');
    // 90 days by default.
    const days = (Date.parse(String(dashboards?.['expiresAt'])) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(89.9);
    expect(days).toBeLessThanOrEqual(90);
    expect((await admin.post('/api/v1/api-tokens', { name: 'dashboards', role: 'admin' })).status).toBe(409);
    const made = await create({ name: 'made-by-alice', role: 'reader' }, admin);
    expect((await admin.get(`/api/v1/api-tokens/${made.id}`)).body).toMatchObject({ createdBy: 'alice' });
  });

  it('refuses a bad token request naming the field', async () => {
    const cases: [unknown, string][] = [
      [{ role: 'reader' }, '$.name'],
      [{ name: 'x', role: 'root' }, '$.role'],
      [{ name: 'has space', role: 'reader' }, '$.name'],
      [{ name: 'bootstrap-admin', role: 'admin' }, '$.name'],
      [{ name: 'x', role: 'reader', expiresAt: '2001-01-01T00:00:00Z' }, '$.expiresAt'],
      [{ name: 'x', role: 'reader', expiresAt: 'tomorrow' }, '$.expiresAt'],
      [{ name: 'x', role: 'reader', expiresInDays: 0 }, '$.expiresInDays'],
      [{ name: 'x', role: 'reader', extra: 1 }, '$'],
    ];
    for (const [body, path] of cases) {
      const answer = await admin.post<{ issues: { path: string }[] }>('/api/v1/api-tokens', body);
      expect({ body, status: answer.status }).toEqual({ body, status: 400 });
      expect(answer.body.issues.map((issue) => issue.path)).toContain(path);
    }
  });

  it('refuses a revoked token at once and an expired one once its time has come', async () => {
    const doomed = await create({ name: 'doomed', role: 'reader' }, admin);
    const holder = suite.api.as(doomed.token);
    expect((await holder.get('/api/v1/nodes')).status).toBe(200);
    const revoked = await admin.delete(`/api/v1/api-tokens/${doomed.id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ state: 'revoked' });
    expect((await holder.get('/api/v1/nodes')).status).toBe(401);
    expect((await admin.delete('/api/v1/api-tokens/0000000000000000')).status).toBe(404);
    // The name of a revoked token may be given again.
    await create({ name: 'doomed', role: 'reader' }, admin);

    const brief = await create(
      { name: 'brief', role: 'reader', expiresAt: new Date(Date.now() + 1_500).toISOString() },
      admin,
    );
    expect((await suite.api.as(brief.token).get('/api/v1/nodes')).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1_700));
    expect((await suite.api.as(brief.token).get('/api/v1/nodes')).status).toBe(401);
    expect((await admin.get(`/api/v1/api-tokens/${brief.id}`)).body).toMatchObject({ state: 'expired' });
  });

  it('counts tokens by state and refusals in /metrics, which stays public', async () => {
    const metrics = await suite.api.as(null).get('/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.text).toMatch(/policygen_api_tokens\{state="revoked"\} [1-9]/);
    expect(metrics.text).toMatch(
      /policygen_http_auth_refusals_total\{service="config-service",status="401"\} [1-9]/,
    );
    expect(metrics.text).toMatch(
      /policygen_http_auth_refusals_total\{service="config-service",status="403"\} [1-9]/,
    );
  });
});
