import { Pool } from 'pg';
import { getTestInfrastructure } from '@policygen/testing-infra';
import { smallFleet } from './testing/fixtures';
import type { RunningConfigService } from './testing/running-config-service';
import { dropSchema, startConfigService, uniqueSchema } from './testing/running-config-service';

interface Preview {
  dryRun: true;
  revision: number;
  affected: { count: number; nodes: string[] };
  failing: { node: string; errors: { code: string }[] }[];
  nodes: { node: string; files: { changed: string[] }; diffs: Record<string, string> }[];
}

/** POST /api/v1/changes?dryRun=true: what a change set would do, and nothing committed. */
describe('config service: dry run of a change set', () => {
  const schema = uniqueSchema('cs_dry_run');
  let service: RunningConfigService;
  let pool: Pool;

  beforeAll(async () => {
    service = await startConfigService({ schema });
    pool = new Pool({ connectionString: getTestInfrastructure().databaseUrl });
    const imported = await service.api.post('/api/v1/import', smallFleet());
    if (imported.status !== 200) throw new Error(`the import failed: ${imported.text}`);
  });
  afterAll(async () => {
    await service.stop();
    await pool.end();
    await dropSchema(schema);
  });

  async function stored(): Promise<{ revision: number; logged: number; outbox: number }> {
    const count = async (table: string): Promise<number> =>
      Number(
        (await pool.query<{ count: string }>(`select count(*) from "${schema}".${table}`)).rows[0]?.count,
      );
    const state = await pool.query<{ revision: string }>(`select revision from "${schema}".config_state`);
    return {
      revision: Number(state.rows[0]?.revision),
      logged: await count('change_log'),
      outbox: await count('outbox'),
    };
  }

  const change = {
    reason: 'try dropbear',
    upsert: {
      directives: [{ id: 'd-ssh', name: 'SSH', technique: 'pkg', parameters: { package: 'dropbear' } }],
    },
  };

  it('answers the affected nodes and their bundle diffs, committing nothing and announcing nothing', async () => {
    const before = await stored();
    const preview = await service.api.post<Preview>('/api/v1/changes?dryRun=true', change);
    expect(preview.status).toBe(200);
    expect(preview.etag).toBe('"1"');
    expect(preview.body).toMatchObject({
      dryRun: true,
      revision: 1,
      affected: { count: 2, nodes: ['n1', 'n2'] },
      failing: [],
    });
    const [n1] = preview.body.nodes;
    expect(n1?.node).toBe('n1');
    expect(Object.values(n1?.diffs ?? {}).join('\n')).toMatch(/^\+.*dropbear/m);

    expect(await stored()).toEqual(before);
    expect((await service.api.get('/api/v1/directives/d-ssh')).body).toMatchObject({
      parameters: { package: 'openssh-server' },
    });
    expect((await service.api.get<{ revision: number }>('/api/v1/revision')).body.revision).toBe(1);
  });

  it('refuses what the commit would refuse, with the same answer', async () => {
    const invalid = { upsert: { nodes: [{ id: 'bad' }] } };
    const previewed = await service.api.post('/api/v1/changes?dryRun=true', invalid);
    const committed = await service.api.post('/api/v1/changes', invalid);
    expect(previewed.status).toBe(400);
    expect(previewed.body).toEqual(committed.body);
    const stale = await service.api.post('/api/v1/changes?dryRun=true', change, {
      headers: { 'if-match': '"0"' },
    });
    expect(stale.status).toBe(412);
    const badFlag = await service.api.post<{ message: string }>('/api/v1/changes?dryRun=maybe', change);
    expect(badFlag.status).toBe(400);
    expect(badFlag.body.message).toBe('dryRun must be true or false, not "maybe"');
    expect((await stored()).revision).toBe(1);
  });

  it('commits when dryRun is false, as without it', async () => {
    const committed = await service.api.post('/api/v1/changes?dryRun=false', change);
    expect(committed.status).toBe(200);
    expect(committed.etag).toBe('"2"');
  });
});
