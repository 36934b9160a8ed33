import { baseRule, node, packageDirective, packageTechnique, relayEu, webGroup } from './testing/fixtures';
import { configServiceForSuite } from './testing/running-config-service';

interface Mutation {
  revision: number;
  entity: Record<string, unknown>;
}

/** CRUD of every entity kind through the REST API, on real Postgres and Kafka. */
describe('config service: entities', () => {
  const suite = configServiceForSuite('cs_entities');

  async function revision(): Promise<number> {
    return (await suite.api.get<{ revision: number }>('/api/v1/revision')).body.revision;
  }

  it('creates every kind of entity with 201, each at the next revision, defaults applied', async () => {
    expect(await revision()).toBe(0);
    const creations: [string, Record<string, unknown>][] = [
      ['techniques', packageTechnique],
      ['directives', packageDirective('d-ssh', 'openssh-server')],
      ['directives', packageDirective('d-vim', 'vim')],
      ['relationships', { from: 'd-ssh', to: 'd-vim' }],
      ['relays', relayEu],
      ['nodes', node('n1')],
      ['nodes', node('n2', 'relay-eu')],
      ['groups', webGroup],
      ['rules', baseRule],
    ];
    for (const [index, [collection, entity]] of creations.entries()) {
      const created = await suite.api.post<Mutation>(`/api/v1/${collection}`, entity);
      expect(created.status).toBe(201);
      expect(created.body.revision).toBe(index + 1);
      expect(created.etag).toBe(`"${index + 1}"`);
      expect(created.body.entity).toMatchObject(entity);
    }
    const technique = await suite.api.get<Record<string, unknown>>('/api/v1/techniques/pkg/1.0');
    expect(technique.body).toEqual({
      ...packageTechnique,
      multiInstance: false,
      policyGeneration: 'merged',
      parameters: [{ name: 'package', required: true }],
      promises: [{ type: 'packages', promiser: '{{package}}', attributes: {} }],
      refresh: [],
    });
    const relationships = await suite.api.get('/api/v1/relationships');
    expect(relationships.body).toEqual([{ from: 'd-ssh', to: 'd-vim', kind: '->' }]);
    const directives = await suite.api.get<Record<string, unknown>[]>('/api/v1/directives');
    expect(
      directives.body.map((directive) => [directive['id'], directive['priority'], directive['enabled']]),
    ).toEqual([
      ['d-ssh', 5, true],
      ['d-vim', 5, true],
    ]);
    expect((await suite.api.get<{ id: string }[]>('/api/v1/nodes')).body.map((entry) => entry.id)).toEqual([
      'n1',
      'n2',
    ]);
    expect(await revision()).toBe(creations.length);
  });

  it('gets one entity by its key, with its own revision as ETag; 404 for a missing one', async () => {
    // Each was created at its own revision by the first test: that is its ETag, not the current revision.
    const paths: [string, Record<string, unknown>, number][] = [
      ['/api/v1/techniques/pkg/1.0', { id: 'pkg', version: '1.0' }, 1],
      ['/api/v1/directives/d-ssh', { id: 'd-ssh' }, 2],
      [`/api/v1/relationships/d-ssh/${encodeURIComponent('->')}/d-vim`, { from: 'd-ssh', to: 'd-vim' }, 4],
      ['/api/v1/rules/r-base', { id: 'r-base' }, 9],
      ['/api/v1/groups/g-web', { id: 'g-web' }, 8],
      ['/api/v1/nodes/n2', { id: 'n2', policyServer: 'relay-eu', state: 'enabled' }, 7],
      ['/api/v1/relays/relay-eu', relayEu, 5],
    ];
    for (const [path, expected, entityRevision] of paths) {
      const found = await suite.api.get(path);
      expect(found.status).toBe(200);
      expect(found.etag).toBe(`"${entityRevision}"`);
      expect(found.body).toMatchObject(expected);
    }
    expect((await suite.api.get('/api/v1/nodes')).etag).toBe(`"${await revision()}"`);
    for (const path of [
      '/api/v1/techniques/pkg/2.0',
      '/api/v1/directives/nope',
      `/api/v1/relationships/d-vim/${encodeURIComponent('->')}/d-ssh`,
      '/api/v1/rules/nope',
      '/api/v1/groups/nope',
      '/api/v1/nodes/nope',
      '/api/v1/relays/nope',
      '/api/v1/parameters/nope',
    ]) {
      const missing = await suite.api.get<{ statusCode: number; message: string }>(path);
      expect(missing.status).toBe(404);
      expect(missing.body.statusCode).toBe(404);
      expect(missing.body.message).toMatch(/does not exist$/);
    }
    expect((await suite.api.get<{ message: string }>('/api/v1/directives/nope')).body.message).toBe(
      'directive nope does not exist',
    );
  });

  it('refuses to create an entity whose key exists (409), changing nothing', async () => {
    const before = await revision();
    const duplicates: [string, Record<string, unknown>, string][] = [
      ['techniques', packageTechnique, 'technique pkg 1.0 already exists'],
      ['directives', packageDirective('d-ssh', 'other'), 'directive d-ssh already exists'],
      ['relationships', { from: 'd-ssh', to: 'd-vim' }, 'relationship d-ssh -> d-vim already exists'],
      ['nodes', node('n1'), 'node n1 already exists'],
      ['relays', relayEu, 'relay relay-eu already exists'],
      ['groups', webGroup, 'group g-web already exists'],
      ['rules', baseRule, 'rule r-base already exists'],
    ];
    for (const [collection, entity, message] of duplicates) {
      const refused = await suite.api.post(`/api/v1/${collection}`, entity);
      expect(refused.status).toBe(409);
      expect(refused.body).toEqual({ statusCode: 409, error: 'Conflict', message });
    }
    expect(await revision()).toBe(before);
    expect((await suite.api.get('/api/v1/directives/d-ssh')).body).toMatchObject({
      parameters: { package: 'openssh-server' },
    });
  });

  it('replaces an entity with PUT (200), the key from the URL; a different key in the body is a 400', async () => {
    const before = await revision();
    const replaced = await suite.api.put<Mutation>('/api/v1/nodes/n1', {
      hostname: 'web1.example.com',
      properties: { datacenter: 'Paris' },
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body.revision).toBe(before + 1);
    expect(replaced.body.entity).toEqual({
      id: 'n1',
      hostname: 'web1.example.com',
      policyServer: 'root',
      state: 'enabled',
      facts: {},
      properties: { datacenter: 'Paris' },
    });
    expect((await suite.api.get('/api/v1/nodes/n1')).body).toEqual(replaced.body.entity);

    const version = await suite.api.put<Mutation>('/api/v1/techniques/pkg/1.0', {
      ...packageTechnique,
      name: 'Packages',
    });
    expect(version.status).toBe(200);
    expect(version.body.entity['name']).toBe('Packages');
    const rule = await suite.api.put<Mutation>('/api/v1/rules/r-base', { ...baseRule, name: 'Base rule' });
    expect(rule.body.entity).toMatchObject({ id: 'r-base', name: 'Base rule', enabled: true });
    const relationship = await suite.api.put(
      `/api/v1/relationships/d-ssh/${encodeURIComponent('->')}/d-vim`,
      {},
    );
    expect(relationship.status).toBe(200);
    expect(await revision()).toBe(before + 4);

    const mismatch = await suite.api.put('/api/v1/directives/d-ssh', packageDirective('d-other', 'x'));
    expect(mismatch.status).toBe(400);
    expect(mismatch.body).toEqual({
      statusCode: 400,
      error: 'Bad Request',
      message: 'the directive is invalid (1 issue)',
      issues: [{ path: '$.id', message: 'must be "d-ssh", as in the URL' }],
    });
    const techniqueMismatch = await suite.api.put('/api/v1/techniques/pkg/1.0', {
      ...packageTechnique,
      version: '2.0',
    });
    expect(techniqueMismatch.status).toBe(400);
    expect((techniqueMismatch.body as { issues: unknown }).issues).toEqual([
      { path: '$.version', message: 'must be "1.0", as in the URL' },
    ]);
    const missing = await suite.api.put('/api/v1/groups/g-none', { name: 'none' });
    expect(missing.status).toBe(404);
    expect(await revision()).toBe(before + 4);
  });

  it('deletes with 204; a directive or group still referenced is a 409 naming what refers to it', async () => {
    const before = await revision();
    const referencedDirective = await suite.api.delete('/api/v1/directives/d-vim');
    expect(referencedDirective.status).toBe(409);
    expect(referencedDirective.body).toEqual({
      statusCode: 409,
      error: 'Conflict',
      message: 'directive d-vim cannot be deleted: it is still referenced',
      issues: [{ path: '$', message: 'relationships[d-ssh -> d-vim].to: unknown directive d-vim' }],
    });
    const referencedGroup = await suite.api.delete('/api/v1/groups/g-web');
    expect(referencedGroup.status).toBe(409);
    expect((referencedGroup.body as { issues: unknown }).issues).toEqual([
      { path: '$', message: 'rules[r-base].targets.include[0]: unknown group g-web' },
    ]);
    expect(await revision()).toBe(before);

    // In dependency order, everything goes.
    const deletions = [
      `/api/v1/relationships/d-ssh/${encodeURIComponent('->')}/d-vim`,
      '/api/v1/rules/r-base',
      '/api/v1/groups/g-web',
      '/api/v1/directives/d-vim',
      '/api/v1/directives/d-ssh',
      '/api/v1/techniques/pkg/1.0',
      '/api/v1/nodes/n2',
      '/api/v1/nodes/n1',
      '/api/v1/relays/relay-eu',
    ];
    for (const [index, path] of deletions.entries()) {
      const deleted = await suite.api.delete(path);
      expect(deleted.status).toBe(204);
      expect(deleted.text).toBe('');
      expect(deleted.etag).toBe(`"${before + index + 1}"`);
      expect((await suite.api.get(path)).status).toBe(404);
      expect((await suite.api.delete(path)).status).toBe(404);
    }
    const empty = await suite.api.get<Record<string, unknown>>('/api/v1/export');
    for (const collection of [
      'techniques',
      'directives',
      'relationships',
      'rules',
      'groups',
      'nodes',
      'relays',
    ])
      expect(empty.body[collection]).toEqual([]);
  });

  it('keeps global parameters of any JSON value: create, read, replace, delete', async () => {
    const before = await revision();
    const created = await suite.api.post('/api/v1/parameters', { name: 'dns_server', value: '10.0.0.1' });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ revision: before + 1, name: 'dns_server', value: '10.0.0.1' });
    const value = await suite.api.get('/api/v1/parameters/dns_server');
    expect(value.headers.get('content-type')).toMatch(/^application\/json/);
    expect(value.text).toBe('"10.0.0.1"');
    expect((await suite.api.post('/api/v1/parameters', { name: 'dns_server', value: 1 })).status).toBe(409);

    for (const next of [null, 42, [1, 'two'], { nested: { deep: true } }, 'text']) {
      const replaced = await suite.api.put('/api/v1/parameters/dns_server', next);
      expect(replaced.status).toBe(200);
      expect((replaced.body as { value: unknown }).value).toEqual(next);
      const read = await suite.api.get('/api/v1/parameters/dns_server');
      expect(read.status).toBe(200);
      expect(JSON.parse(read.text)).toEqual(next);
    }
    await suite.api.post('/api/v1/parameters', { name: 'ntp', value: { servers: ['a', 'b'] } });
    expect((await suite.api.get('/api/v1/parameters')).body).toEqual({
      dns_server: 'text',
      ntp: { servers: ['a', 'b'] },
    });
    expect((await suite.api.put('/api/v1/parameters/missing', 1)).status).toBe(404);

    const badName = await suite.api.post('/api/v1/parameters', { name: 'bad-name', value: 1, extra: true });
    expect(badName.status).toBe(400);
    expect((badName.body as { issues: unknown }).issues).toEqual([
      { path: '$.extra', message: 'unknown field' },
      { path: '$.name', message: 'must match ^[a-zA-Z0-9][a-zA-Z0-9_]*$' },
    ]);
    const badOrdering = await suite.api.post('/api/v1/parameters', {
      name: 'policygen_ordering',
      value: 'sideways',
    });
    expect(badOrdering.status).toBe(400);
    expect((badOrdering.body as { issues: unknown }).issues).toEqual([
      { path: '$.value', message: 'must be one of alphanumeric, title-hash, random' },
    ]);

    expect((await suite.api.delete('/api/v1/parameters/ntp')).status).toBe(204);
    expect((await suite.api.get('/api/v1/parameters/ntp')).status).toBe(404);
    expect(await revision()).toBe(before + 1 + 5 + 1 + 1);
  });

  it('replaces the settings with PUT (defaults for what is left out) and merges them with PATCH', async () => {
    const defaults = {
      policyMode: 'enforce',
      policyModeOverridable: true,
      parameterInheritModes: {},
      maxValueBytes: 65_536,
      maxBundleBytes: 16_777_216,
    };
    expect((await suite.api.get('/api/v1/settings')).body).toEqual({
      ordering: 'alphanumeric',
      orderingSeed: 0,
      ...defaults,
    });
    const merged = await suite.api.patch('/api/v1/settings', { ordering: 'random', orderingSeed: 7 });
    expect(merged.status).toBe(200);
    expect((merged.body as { settings: unknown }).settings).toEqual({
      ordering: 'random',
      orderingSeed: 7,
      ...defaults,
    });
    const seedOnly = await suite.api.patch('/api/v1/settings', { orderingSeed: 9, policyMode: 'audit' });
    expect((seedOnly.body as { settings: unknown }).settings).toEqual({
      ordering: 'random',
      orderingSeed: 9,
      ...defaults,
      policyMode: 'audit',
    });
    const replaced = await suite.api.put('/api/v1/settings', { ordering: 'title-hash' });
    expect((replaced.body as { settings: unknown }).settings).toEqual({
      ordering: 'title-hash',
      orderingSeed: 0,
      ...defaults,
    });
    expect((await suite.api.get('/api/v1/settings')).body).toEqual({
      ordering: 'title-hash',
      orderingSeed: 0,
      ...defaults,
    });
    const invalid = await suite.api.put('/api/v1/settings', { ordering: 'sideways', colour: 'blue' });
    expect(invalid.status).toBe(400);
    expect((invalid.body as { issues: unknown }).issues).toEqual([
      {
        path: '$.ordering',
        message: 'must be one of "alphanumeric", "title-hash", "random", got string "sideways"',
      },
      { path: '$.colour', message: 'unknown field' },
    ]);
  });

  it('answers If-Match: the current revision applies, any other is a 412 with the current revision', async () => {
    const current = await revision();
    const stale = await suite.api.post(
      '/api/v1/relays',
      { id: 'relay-us' },
      { headers: { 'if-match': `"${current - 1}"` } },
    );
    expect(stale.status).toBe(412);
    expect(stale.body).toEqual({
      statusCode: 412,
      error: 'Precondition Failed',
      message: `If-Match "${current - 1}" does not match the current revision ${current}`,
      revision: current,
    });
    expect((await suite.api.get('/api/v1/relays/relay-us')).status).toBe(404);
    expect(
      (await suite.api.delete('/api/v1/parameters/dns_server', { headers: { 'if-match': '0' } })).status,
    ).toBe(412);

    const quoted = await suite.api.post(
      '/api/v1/relays',
      { id: 'relay-us' },
      { headers: { 'if-match': `"${current}"` } },
    );
    expect(quoted.status).toBe(201);
    expect(quoted.etag).toBe(`"${current + 1}"`);
    const bare = await suite.api.put(
      '/api/v1/relays/relay-us',
      {},
      { headers: { 'if-match': String(current + 1) } },
    );
    expect(bare.status).toBe(200);
    const star = await suite.api.delete('/api/v1/relays/relay-us', { headers: { 'if-match': '*' } });
    expect(star.status).toBe(204);
    const listed = await suite.api.post(
      '/api/v1/changes',
      { upsert: { parameters: { listed: true } } },
      { headers: { 'if-match': `"1", "${current + 3}"` } },
    );
    expect(listed.status).toBe(200);
    expect(await revision()).toBe(current + 4);
  });
});
