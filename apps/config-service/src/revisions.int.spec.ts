import { Pool } from 'pg';
import { PostgresConfigStore } from '@policygen/store';
import { eventually, getTestInfrastructure } from '@policygen/testing-infra';
import type { ApiClient, ApiResponse } from './testing/api-client';
import { node, smallFleet } from './testing/fixtures';
import type { RunningConfigService } from './testing/running-config-service';
import { dropSchema, startConfigService, uniqueSchema } from './testing/running-config-service';

/** Each committed batch gets the next revision: no gap, no repeat, one instance or several. */
describe('config service: revisions', () => {
  const schema = uniqueSchema('cs_revisions');
  const running: RunningConfigService[] = [];
  let store: PostgresConfigStore;

  beforeAll(() => {
    store = new PostgresConfigStore({ connectionString: getTestInfrastructure().databaseUrl, schema });
  });
  afterAll(async () => {
    await Promise.all(running.map((service) => service.stop()));
    await store.close();
    await dropSchema(schema);
  });

  async function start(): Promise<ApiClient> {
    const service = await startConfigService({ schema, followIntervalMs: 100 });
    running.push(service);
    return service.api;
  }

  function revisionsOf(responses: readonly ApiResponse[]): number[] {
    return responses.map((response) => {
      expect(response.status).toBeGreaterThanOrEqual(200);
      expect(response.status).toBeLessThan(300);
      return Number(response.etag?.replaceAll('"', ''));
    });
  }

  async function logged(): Promise<number[]> {
    return (await store.changesSince(0)).map((change) => change.revision);
  }

  it('numbers a series of mutations, concurrent ones included, without a gap', async () => {
    const api = await start();
    const series = [
      await api.post('/api/v1/import', smallFleet()),
      await api.post('/api/v1/nodes', node('n3')),
      await api.put('/api/v1/nodes/n3', { hostname: 'n3.example.org' }),
      await api.post('/api/v1/parameters', { name: 'p0', value: 0 }),
      await api.delete('/api/v1/nodes/n3'),
      await api.patch('/api/v1/settings', { orderingSeed: 1 }),
    ];
    expect(revisionsOf(series)).toEqual([1, 2, 3, 4, 5, 6]);

    // Refused requests in the middle of it take no revision. The first commit waits on a lock held
    // here until every request has arrived: those behind it are committed together, however fast
    // a commit is.
    const lock = new Pool({ connectionString: getTestInfrastructure().databaseUrl, max: 1 });
    const holder = await lock.connect();
    await holder.query('begin');
    await holder.query(`select revision from "${schema}".config_state where id = 1 for update`);
    const pending = Promise.all(
      Array.from({ length: 30 }, (_, index) => {
        if (index % 3 === 0)
          return api.post('/api/v1/changes', { upsert: { parameters: { [`c${index}`]: index } } });
        if (index % 3 === 1) return api.post('/api/v1/nodes', node(`cn${index}`));
        return api.put('/api/v1/parameters/p0', index);
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await holder.query('commit');
    holder.release();
    await lock.end();
    const concurrent = await pending;
    const refusals = await Promise.all([
      api.post('/api/v1/nodes', node('n1')),
      api.delete('/api/v1/directives/d-ssh'),
      api.post('/api/v1/changes', { upsert: { nodes: [{ id: 'bad' }] } }),
    ]);
    expect(refusals.map((response) => response.status)).toEqual([409, 409, 400]);
    const revisions = revisionsOf(concurrent).sort((a, b) => a - b);
    expect(revisions).toEqual(Array.from({ length: 30 }, (_, index) => 7 + index));
    expect((await api.get<{ revision: number }>('/api/v1/revision')).body.revision).toBe(36);
    expect(await logged()).toEqual(Array.from({ length: 36 }, (_, index) => index + 1));
    // Requests that waited while a commit ran were committed together (one transaction, one time).
    const times = (await store.changesSince(6)).map((change) => change.committedAt.getTime());
    expect(new Set(times).size).toBeLessThan(times.length);
    // And the configuration served is the one stored, change by change.
    expect((await api.get('/api/v1/export')).body).toEqual((await store.snapshot()).fleet);
  });

  it('lets several instances on one database commit in turn, each validating against the others', async () => {
    const [first, second] = [await start(), await start()];
    const start36 = (await second.get<{ revision: number }>('/api/v1/revision')).body.revision;
    expect(start36).toBe(36);

    // The second instance has not seen the directive yet when the rule naming it arrives.
    const directive = await first.post('/api/v1/directives', {
      id: 'd-new',
      name: 'New',
      technique: 'pkg',
      parameters: { package: 'curl' },
    });
    expect(directive.status).toBe(201);
    const rule = await second.post('/api/v1/rules', {
      id: 'r-new',
      name: 'New',
      directives: ['d-new'],
      targets: ['special:all'],
    });
    expect(rule.status).toBe(201);
    expect(rule.etag).toBe('"38"');
    // And a client holding the second's ETag may write through the first.
    const conditional = await first.put(
      '/api/v1/rules/r-new',
      { name: 'Renamed', directives: ['d-new'] },
      {
        headers: { 'if-match': rule.etag ?? '' },
      },
    );
    expect(conditional.status).toBe(200);

    const concurrent = await Promise.all(
      Array.from({ length: 24 }, (_, index) =>
        (index % 2 === 0 ? first : second).post('/api/v1/changes', {
          upsert: { parameters: { [`m${index}`]: index } },
        }),
      ),
    );
    expect(revisionsOf(concurrent).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 24 }, (_, index) => 40 + index),
    );
    expect(await logged()).toEqual(Array.from({ length: 63 }, (_, index) => index + 1));

    // Both follow the log: each serves the same configuration at the same revision.
    await eventually(
      async () =>
        (await first.get('/api/v1/export')).etag === '"63"' &&
        (await second.get('/api/v1/export')).etag === '"63"',
      { what: 'both instances at revision 63' },
    );
    const exports = await Promise.all([first.get('/api/v1/export'), second.get('/api/v1/export')]);
    expect(exports[0].body).toEqual(exports[1].body);
    expect(exports[0].body).toEqual((await store.snapshot()).fleet);

    // A restarted instance loads the same configuration from Postgres.
    const third = await start();
    const reloaded = await third.get('/api/v1/export');
    expect(reloaded.etag).toBe('"63"');
    expect(reloaded.body).toEqual(exports[0].body);
  });
});
