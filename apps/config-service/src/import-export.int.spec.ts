import { stringify } from 'yaml';
import { compareCodeUnits, relationshipKey, validateFleet } from '@policygen/engine';
import type { Fleet } from '@policygen/engine';
import { buildBenchFleet, buildDemoFleet } from '@policygen/fleets';
import type { FleetPlacement } from '@policygen/store';
import { parseFleetPlacement, placementOf } from '@policygen/store';
import { smallFleet } from './testing/fixtures';
import type { RunningConfigService } from './testing/running-config-service';
import {
  configServiceForSuite,
  dropSchema,
  startConfigService,
  uniqueSchema,
} from './testing/running-config-service';

/** A fleet file as the validator normalises it, each collection in key order, as export gives it. */
function normalised(input: unknown): Fleet {
  const result = validateFleet(input);
  if (!result.ok) throw new Error(`invalid fleet: ${JSON.stringify(result.issues)}`);
  const fleet = result.fleet;
  const byId = <T extends { id: string }>(list: readonly T[]): T[] =>
    [...list].sort((a, b) => compareCodeUnits(a.id, b.id));
  return {
    ...fleet,
    techniques: [...fleet.techniques].sort(
      (a, b) => compareCodeUnits(a.id, b.id) || compareCodeUnits(a.version, b.version),
    ),
    directives: byId(fleet.directives),
    relationships: [...fleet.relationships].sort((a, b) =>
      compareCodeUnits(relationshipKey(a), relationshipKey(b)),
    ),
    rules: byId(fleet.rules),
    groups: byId(fleet.groups),
    nodes: byId(fleet.nodes),
    relays: byId(fleet.relays),
  };
}

/** Import replaces the whole configuration in one revision; export gives it back. */
describe('config service: import and export', () => {
  const suite = configServiceForSuite('cs_import');

  it('imports the demo fleet in one revision; export gives it back as the validator normalises it', async () => {
    const demo = normalised(buildDemoFleet());
    const imported = await suite.api.post<{ revision: number; committedAt: string }>(
      '/api/v1/import',
      buildDemoFleet(),
    );
    expect(imported.status).toBe(200);
    expect(imported.body.revision).toBe(1);
    expect(imported.etag).toBe('"1"');
    expect(Date.parse(imported.body.committedAt)).not.toBeNaN();

    const exported = await suite.api.get<Fleet>('/api/v1/export');
    expect(exported.status).toBe(200);
    expect(exported.etag).toBe('"1"');
    expect(exported.body).toEqual(demo);
    expect(exported.body.nodes).toHaveLength(300);
    const nodes = await suite.api.get<{ id: string }[]>('/api/v1/nodes');
    expect(nodes.body.map((entry) => entry.id)).toEqual(demo.nodes.map((entry) => entry.id));

    // What export gives imports again unchanged, at the next revision.
    const again = await suite.api.post<{ revision: number }>('/api/v1/import', exported.body);
    expect(again.body.revision).toBe(2);
    expect((await suite.api.get('/api/v1/export')).body).toEqual(demo);
  });

  it('exports the placement alone with ?view=placement, at the same revision; another view is a 400 naming it', async () => {
    const fleet = (await suite.api.get<Fleet>('/api/v1/export')).body;
    const placement = await suite.api.get<FleetPlacement>('/api/v1/export?view=placement');
    expect(placement.status).toBe(200);
    expect(placement.etag).toBe((await suite.api.get('/api/v1/revision')).etag);
    expect(placement.body).toEqual(placementOf(fleet));
    expect(placement.body.relays.length).toBeGreaterThan(0);
    expect(parseFleetPlacement(placement.body)).toEqual({ ok: true, placement: placement.body });

    const wrong = await suite.api.get<{ message: string }>('/api/v1/export?view=nodes');
    expect(wrong.status).toBe(400);
    expect(JSON.stringify(wrong.body)).toContain('view');
  });

  it('replaces the configuration with a second import: what the file leaves out is deleted', async () => {
    const before = (await suite.api.get<Fleet>('/api/v1/export')).body;
    expect(before.nodes.some((entry) => entry.id === 'n1')).toBe(false);
    const replaced = await suite.api.post<{ revision: number }>('/api/v1/import', smallFleet(), {
      headers: { 'if-match': '"2"' },
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body.revision).toBe(3);

    const exported = await suite.api.get<Fleet>('/api/v1/export');
    expect(exported.body).toEqual(normalised(smallFleet()));
    for (const node of before.nodes.slice(0, 5))
      expect((await suite.api.get(`/api/v1/nodes/${node.id}`)).status).toBe(404);
    for (const directive of before.directives.slice(0, 5))
      expect((await suite.api.get(`/api/v1/directives/${directive.id}`)).status).toBe(404);
    expect((await suite.api.get('/api/v1/parameters')).body).toEqual({ dns_server: '10.0.0.1' });
    expect((await suite.api.get<{ revision: number }>('/api/v1/revision')).body.revision).toBe(3);
  });

  it('imports a fleet file sent as YAML', async () => {
    const fleet = { ...smallFleet(), parameters: { dns_server: '10.0.0.2', from_yaml: true } };
    const imported = await suite.api.send<{ revision: number }>('POST', '/api/v1/import', {
      raw: stringify(fleet),
      contentType: 'application/yaml',
    });
    expect(imported.status).toBe(200);
    expect(imported.body.revision).toBe(4);
    expect((await suite.api.get('/api/v1/export')).body).toEqual(normalised(fleet));
  });

  it('imports an empty fleet file: everything is deleted, settings back to their defaults', async () => {
    await suite.api.put('/api/v1/settings', { ordering: 'random', orderingSeed: 3 });
    const emptied = await suite.api.post<{ revision: number }>('/api/v1/import', {});
    expect(emptied.status).toBe(200);
    expect((await suite.api.get('/api/v1/export')).body).toEqual(normalised({}));
  });
});

/**
 * An import of more nodes than an index update takes builds the index anew from the fleet it
 * committed; a service started afterwards builds it from the store. Both must serve the same.
 */
describe('config service: an import above the rebuild threshold', () => {
  const schema = uniqueSchema('cs_big_import');
  const services: RunningConfigService[] = [];
  afterAll(async () => {
    for (const service of services) await service.stop();
    await dropSchema(schema);
  });

  it('leaves the service as a fresh start from the store finds it', async () => {
    const { fleet } = buildBenchFleet({
      nodes: 1_500,
      groups: 90,
      directives: 40,
      techniques: 10,
      rules: 24,
    });
    const [first] = fleet.relationships ?? [];
    if (!first) throw new Error('the bench fleet has no relationship to give twice');
    // The same relationship twice is one: the store keeps one row, the index too.
    const file = { ...fleet, relationships: [first, ...(fleet.relationships ?? [])] };
    const importer = await startConfigService({ schema });
    services.push(importer);
    const imported = await importer.api.post<{ revision: number }>('/api/v1/import', file);
    expect(imported.status).toBe(200);
    const fresh = await startConfigService({ schema });
    services.push(fresh);

    const [exported, reloaded] = await Promise.all([
      importer.api.get<Fleet>('/api/v1/export'),
      fresh.api.get<Fleet>('/api/v1/export'),
    ]);
    expect(exported.etag).toBe(`"${imported.body.revision}"`);
    expect(reloaded.etag).toBe(exported.etag);
    expect(exported.body).toEqual(reloaded.body);
    expect(exported.body.relationships).toHaveLength(fleet.relationships?.length ?? 0);
    expect(exported.body.nodes).toHaveLength(1_500);
    for (const path of ['/api/v1/nodes', '/api/v1/groups', '/api/v1/parameters']) {
      const [here, there] = await Promise.all([importer.api.get(path), fresh.api.get(path)]);
      expect(here.body).toEqual(there.body);
    }
    const node = (exported.body.nodes[700] as { id: string }).id;
    for (const path of [`/api/v1/nodes/${node}`, '/api/v1/settings']) {
      const [here, there] = await Promise.all([importer.api.get(path), fresh.api.get(path)]);
      expect(here.status).toBe(200);
      expect(here.etag).toBe(there.etag);
    }
    // The rebuilt index takes the next change as the store's would.
    const changed = await importer.api.post<{ revision: number }>('/api/v1/changes', {
      upsert: { nodes: [{ ...exported.body.nodes[700], properties: { after: 'import' } }] },
    });
    expect(changed.status).toBe(200);
    expect(changed.body.revision).toBe(imported.body.revision + 1);
  });
});
