import type { ApiResponse } from './testing/api-client';
import { smallFleet } from './testing/fixtures';
import { configServiceForSuite } from './testing/running-config-service';

interface ErrorBody {
  statusCode: number;
  error: string;
  message: string;
  issues?: { path: string; message: string }[];
}

const BODY_LIMIT = 64 * 1024;

/** Requests the service must refuse: a 4xx that says why, and the configuration untouched. */
describe('config service: bad requests', () => {
  const suite = configServiceForSuite('cs_bad', { bodyLimitBytes: BODY_LIMIT });

  beforeAll(async () => {
    const seeded = await suite.api.post('/api/v1/import', smallFleet());
    if (seeded.status !== 200) throw new Error(`could not import the fleet: ${seeded.text}`);
  });

  /** Sends a request that must fail with `status`, and checks that revision and export did not move. */
  async function expectRefused(status: number, send: () => Promise<ApiResponse>): Promise<ErrorBody> {
    const before = await suite.api.get('/api/v1/export');
    const response = await send();
    expect(response.status).toBe(status);
    const after = await suite.api.get('/api/v1/export');
    expect(after.etag).toBe(before.etag);
    expect(after.body).toEqual(before.body);
    const body = response.body as ErrorBody;
    expect(body.statusCode).toBe(status);
    expect(typeof body.message).toBe('string');
    return body;
  }

  it('lists every unknown field of a change set with its JSON path', async () => {
    const body = await expectRefused(400, () =>
      suite.api.post('/api/v1/changes', {
        upsert: {
          directives: [{ id: 'd-new', name: 'New', technique: 'pkg', colour: 'red' }],
          nodes: [{ id: 'n9', hostname: 'h9', size: 'XL' }],
          widgets: [],
        },
        delete: { rules: [42] },
        extra: true,
      }),
    );
    expect(body.error).toBe('Bad Request');
    expect(body.message).toBe('the change set is invalid (5 issues)');
    expect(body.issues).toEqual(
      expect.arrayContaining([
        { path: '$.extra', message: 'unknown field (upsert or delete)' },
        { path: '$.upsert.widgets', message: 'unknown field' },
        { path: '$.upsert.directives[0].colour', message: 'unknown field' },
        { path: '$.upsert.nodes[0].size', message: 'unknown field' },
        { path: '$.delete.rules[0]', message: 'expected string, got number 42' },
      ]),
    );
    expect(body.issues).toHaveLength(5);
  });

  it('lists every dangling reference with its JSON path', async () => {
    const body = await expectRefused(400, () =>
      suite.api.post('/api/v1/changes', {
        upsert: {
          directives: [{ id: 'd-new', name: 'New', technique: 'no-such-technique' }],
          rules: [{ id: 'r-new', name: 'New', directives: ['d-ssh', 'd-gone'], targets: ['group:g-gone'] }],
          nodes: [{ id: 'n9', hostname: 'h9', policyServer: 'relay-gone' }],
        },
        delete: { directives: ['d-absent'] },
      }),
    );
    expect(body.issues).toEqual(
      expect.arrayContaining([
        { path: '$.delete.directives[0]', message: 'no directive d-absent to delete' },
        { path: '$.upsert.directives[0].technique', message: 'unknown technique no-such-technique' },
        { path: '$.upsert.rules[0].directives[1]', message: 'unknown directive d-gone' },
        { path: '$.upsert.rules[0].targets[0]', message: 'unknown group g-gone' },
        {
          path: '$.upsert.nodes[0].policyServer',
          message: 'unknown policy server relay-gone (root or a relay id)',
        },
      ]),
    );
    expect(body.issues).toHaveLength(5);
  });

  it("reports an entity's issues at paths inside the body it was sent as", async () => {
    const directive = await expectRefused(400, () =>
      suite.api.post('/api/v1/directives', {
        id: 'd-new',
        name: 'New',
        technique: 'no-such',
        priority: 11,
        colour: 'red',
      }),
    );
    expect(directive.message).toBe('the directive is invalid (2 issues)');
    expect(directive.issues).toEqual(
      expect.arrayContaining([
        { path: '$.colour', message: 'unknown field' },
        { path: '$.priority', message: 'must be from 0 (highest) to 10 (lowest)' },
      ]),
    );
    const rule = await expectRefused(400, () =>
      suite.api.post('/api/v1/rules', {
        id: 'r-new',
        name: 'New',
        directives: ['d-gone', 'd-ssh'],
        targets: ['group:g-gone'],
      }),
    );
    expect(rule.issues).toEqual([
      { path: '$.directives[0]', message: 'unknown directive d-gone' },
      { path: '$.targets[0]', message: 'unknown group g-gone' },
    ]);
    const notAnObject = await expectRefused(400, () => suite.api.post('/api/v1/nodes', ['n1']));
    expect(notAnObject.issues).toEqual([{ path: '$', message: 'expected object, got an array' }]);
    const replaced = await expectRefused(400, () => suite.api.put('/api/v1/nodes/n1', { hostname: '' }));
    expect(replaced.issues?.[0]?.path).toBe('$.hostname');
  });

  it('refuses malformed JSON with 400 naming the problem', async () => {
    const body = await expectRefused(400, () =>
      suite.api.send('POST', '/api/v1/changes', {
        raw: '{"upsert": {"parameters": {"a": 1,}}}',
        contentType: 'application/json',
      }),
    );
    expect(body.error).toBe('Bad Request');
    expect(body.message).toMatch(/^the request body is not valid JSON: .+/);
    const truncated = await expectRefused(400, () =>
      suite.api.send('PUT', '/api/v1/nodes/n1', { raw: '{"hostname": "x"', contentType: 'application/json' }),
    );
    expect(truncated.message).toMatch(/^the request body is not valid JSON/);
  });

  it('refuses a body over the configured limit with 413, and takes one under it', async () => {
    const huge = { upsert: { parameters: { blob: 'x'.repeat(BODY_LIMIT + 1) } } };
    const body = await expectRefused(413, () => suite.api.post('/api/v1/changes', huge));
    expect(body.error).toBe('Payload Too Large');
    expect(body.message).toMatch(new RegExp(`is larger than the limit of ${BODY_LIMIT} bytes$`));
    const hugeImport = await expectRefused(413, () =>
      suite.api.post('/api/v1/import', { ...smallFleet(), parameters: { blob: 'x'.repeat(2 * BODY_LIMIT) } }),
    );
    expect(hugeImport.message).toMatch(/larger than the limit/);

    const fits = await suite.api.post('/api/v1/changes', {
      upsert: { parameters: { blob: 'x'.repeat(BODY_LIMIT / 2) } },
    });
    expect(fits.status).toBe(200);
  });

  it('refuses hostile values with 400 and their JSON path: long ids, deep nesting', async () => {
    const longId = await expectRefused(400, () =>
      suite.api.post('/api/v1/changes', { upsert: { nodes: [{ id: 'n'.repeat(10_000), hostname: 'h' }] } }),
    );
    expect(longId.issues).toEqual([
      { path: '$.upsert.nodes[0].id', message: 'must be at most 128 characters' },
    ]);
    // Written as text: 10,000 levels are more than JSON.stringify itself can nest.
    const deep = await expectRefused(400, () =>
      suite.api.send('POST', '/api/v1/changes', {
        raw: `{"upsert": {"parameters": {"deep": ${'['.repeat(10_000)}${']'.repeat(10_000)}}}}`,
        contentType: 'application/json',
      }),
    );
    expect(deep.issues).toEqual([
      {
        path: `$.upsert.parameters.deep${'[0]'.repeat(61)}`,
        message: 'is nested more than 64 levels deep in the document: it was not read further',
      },
    ]);
  });

  it('refuses bodies that are not JSON, or missing, or the wrong shape', async () => {
    const text = await expectRefused(415, () =>
      suite.api.send('POST', '/api/v1/changes', { raw: 'upsert=1', contentType: 'text/plain' }),
    );
    expect(text.error).toBe('Unsupported Media Type');
    const missing = await expectRefused(400, () => suite.api.send('POST', '/api/v1/changes'));
    expect(missing.message).toBe('this request needs a JSON body');
    const array = await expectRefused(400, () => suite.api.post('/api/v1/changes', [1, 2]));
    expect(array.issues).toEqual([
      { path: '$', message: 'a change set must be an object with upsert and/or delete' },
    ]);
    const fleet = await expectRefused(400, () =>
      suite.api.post('/api/v1/import', {
        nodes: [{ id: 'n1', hostname: 'h', policyServer: 'relay-gone' }],
        colour: 1,
      }),
    );
    expect(fleet.message).toBe('the fleet file is invalid (2 issues)');
    expect(fleet.issues).toEqual(
      expect.arrayContaining([
        { path: '$.colour', message: 'unknown field' },
        { path: '$.nodes[0].policyServer', message: 'unknown policy server relay-gone (root or a relay id)' },
      ]),
    );
    const yaml = await expectRefused(400, () =>
      suite.api.send('POST', '/api/v1/import', { raw: 'nodes: [unclosed', contentType: 'application/yaml' }),
    );
    expect(yaml.issues?.[0]?.message).toMatch(/^not valid YAML/);
  });

  it('refuses conflicts, missing entities and stale revisions, changing nothing', async () => {
    await expectRefused(409, () =>
      suite.api.post('/api/v1/directives', { id: 'd-ssh', name: 'again', technique: 'pkg' }),
    );
    await expectRefused(409, () => suite.api.delete('/api/v1/directives/d-ssh'));
    await expectRefused(409, () => suite.api.delete('/api/v1/groups/g-web'));
    await expectRefused(404, () => suite.api.put('/api/v1/rules/r-none', { name: 'none' }));
    await expectRefused(404, () => suite.api.delete('/api/v1/nodes/n-none'));
    await expectRefused(404, () => suite.api.get('/api/v1/no-such-route'));
    await expectRefused(412, () =>
      suite.api.post(
        '/api/v1/changes',
        { upsert: { parameters: { late: 1 } } },
        { headers: { 'if-match': '"1"' } },
      ),
    );
  });
});
