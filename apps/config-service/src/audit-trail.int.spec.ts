import fc from 'fast-check';
import pino from 'pino';
import { node, smallFleet } from './testing/fixtures';
import { configServiceForSuite } from './testing/running-config-service';

interface Revision {
  revision: number;
  committedAt: string;
  author: string | null;
  reason: string | null;
  counts: Record<string, { upserted: number; deleted: number }>;
}
interface RevisionsPage {
  revisions: Revision[];
  next: number | null;
}
interface ErrorBody {
  statusCode: number;
  message: string;
  issues?: { path: string; message: string }[];
  revision?: number;
}

/** Who changed what, when and why; and ETags per entity, so that editors of different entities never collide. */
describe('config service: audit trail', () => {
  const suite = configServiceForSuite('cs_audit');
  const reasonHeader = (reason: string): { headers: Record<string, string> } => ({
    headers: { 'x-policygen-reason': reason },
  });

  async function currentRevision(): Promise<number> {
    return (await suite.api.get<{ revision: number }>('/api/v1/revision')).body.revision;
  }

  it('records every revision with its author, reason and counts, and shows one with its change set', async () => {
    expect((await suite.api.get<RevisionsPage>('/api/v1/revisions')).body).toEqual({
      revisions: [],
      next: null,
    });
    expect(
      (await suite.api.post('/api/v1/import', smallFleet(), reasonHeader('initial import'))).status,
    ).toBe(200);
    // The author is the name of the token that made the change.
    const created = await suite.api.post<{ token: string }>('/api/v1/api-tokens', {
      name: 'alice',
      role: 'editor',
    });
    expect((await suite.api.as(created.body.token).post('/api/v1/nodes', node('n3'))).status).toBe(201);
    const changed = await suite.api.post('/api/v1/changes', {
      reason: 'n3 leaves; dns moves',
      upsert: { parameters: { dns_server: '10.0.0.2' } },
      delete: { nodes: ['n3'] },
    });
    expect(changed.status).toBe(200);
    expect(
      (
        await suite.api.patch(
          '/api/v1/settings',
          { orderingSeed: 4 },
          reasonHeader("UTF-8''d%C3%A9j%C3%A0 vu"),
        )
      ).status,
    ).toBe(200);

    const page = await suite.api.get<RevisionsPage>('/api/v1/revisions');
    expect(page.status).toBe(200);
    expect(page.body.next).toBeNull();
    expect(
      page.body.revisions.map(
        ({ committedAt, ...rest }) => (expect(Date.parse(committedAt)).not.toBeNaN(), rest),
      ),
    ).toEqual([
      {
        revision: 1,
        author: 'bootstrap-admin',
        reason: 'initial import',
        counts: {
          techniques: { upserted: 1, deleted: 0 },
          directives: { upserted: 2, deleted: 0 },
          relationships: { upserted: 1, deleted: 0 },
          rules: { upserted: 1, deleted: 0 },
          groups: { upserted: 1, deleted: 0 },
          nodes: { upserted: 2, deleted: 0 },
          relays: { upserted: 1, deleted: 0 },
          parameters: { upserted: 1, deleted: 0 },
          settings: { upserted: expect.any(Number), deleted: 0 },
        },
      },
      { revision: 2, author: 'alice', reason: null, counts: { nodes: { upserted: 1, deleted: 0 } } },
      {
        revision: 3,
        author: 'bootstrap-admin',
        reason: 'n3 leaves; dns moves',
        counts: { nodes: { upserted: 0, deleted: 1 }, parameters: { upserted: 1, deleted: 0 } },
      },
      {
        revision: 4,
        author: 'bootstrap-admin',
        reason: 'déjà vu',
        counts: { settings: { upserted: 1, deleted: 0 } },
      },
    ]);

    const third = await suite.api.get<Record<string, unknown>>('/api/v1/revisions/3');
    expect(third.status).toBe(200);
    expect(third.body).toMatchObject({
      revision: 3,
      reason: 'n3 leaves; dns moves',
      changes: {
        nodes: { upserted: [], deleted: ['n3'] },
        parameters: { upserted: ['dns_server'], deleted: [] },
      },
      changeSet: { upsert: { parameters: { dns_server: '10.0.0.2' } }, delete: { nodes: ['n3'] } },
    });
    // The reason is the revision's, not its change set's.
    expect(third.body['changeSet']).not.toHaveProperty('reason');
    expect((await suite.api.get<ErrorBody>('/api/v1/revisions/99')).body).toMatchObject({
      statusCode: 404,
      message: 'revision 99 does not exist',
    });
  });

  it('pages through the revisions with any limit: each once, in order, until next is null', async () => {
    for (let index = 0; index < 6; index++)
      expect((await suite.api.put('/api/v1/parameters/dns_server', `10.0.1.${index}`)).status).toBe(200);
    const all = await currentRevision();
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: all + 1 }), async (limit) => {
        const seen: number[] = [];
        let after: number | null = 0;
        while (after !== null) {
          const page: RevisionsPage = (
            await suite.api.get<RevisionsPage>(`/api/v1/revisions?after=${after}&limit=${limit}`)
          ).body;
          expect(page.revisions.length).toBeLessThanOrEqual(limit);
          seen.push(...page.revisions.map((revision) => revision.revision));
          after = page.next;
        }
        expect(seen).toEqual(Array.from({ length: all }, (_, index) => index + 1));
      }),
      { numRuns: 12 },
    );
    const newest = await suite.api.get<RevisionsPage>(`/api/v1/revisions?after=${all - 2}`);
    expect(newest.body.revisions.map((revision) => revision.revision)).toEqual([all - 1, all]);
  });

  it('refuses a bad query parameter or revision number with a 400 naming it', async () => {
    const cases: [string, string][] = [
      ['/api/v1/revisions?limit=0', 'limit'],
      ['/api/v1/revisions?limit=1001', 'limit'],
      ['/api/v1/revisions?limit=ten', 'limit'],
      ['/api/v1/revisions?after=-1', 'after'],
      ['/api/v1/revisions?after=1.5', 'after'],
      ['/api/v1/revisions/abc', 'revision'],
      ['/api/v1/revisions/0', 'revision'],
    ];
    for (const [path, parameter] of cases) {
      const refused = await suite.api.get<ErrorBody>(path);
      expect([path, refused.status]).toEqual([path, 400]);
      expect(refused.body.message).toMatch(new RegExp(`^${parameter} must be an integer`));
      expect(refused.body.issues?.[0]?.path).toBe(parameter);
    }
  });

  it('refuses a reason that is too long, holds a control character, or is given twice, committing nothing', async () => {
    const before = await currentRevision();
    const tooLong = await suite.api.post('/api/v1/nodes', node('n9'), reasonHeader('x'.repeat(1_001)));
    expect(tooLong.status).toBe(400);
    expect((tooLong.body as ErrorBody).issues).toEqual([
      { path: 'X-Policygen-Reason', message: 'is 1001 characters long, more than the limit of 1000' },
    ]);
    const tab = await suite.api.put('/api/v1/parameters/dns_server', '10.0.0.9', reasonHeader('a\tb'));
    expect((tab.body as ErrorBody).issues?.[0]?.path).toBe('X-Policygen-Reason');
    const control = await suite.api.post('/api/v1/changes', {
      reason: 'a\u0001b',
      upsert: { parameters: { x: 1 } },
    });
    expect(control.status).toBe(400);
    expect((control.body as ErrorBody).issues).toEqual([
      { path: '$.reason', message: 'must not contain control characters (U+0000–U+001F, U+007F)' },
    ]);
    const twice = await suite.api.post(
      '/api/v1/changes',
      { reason: 'one', upsert: { parameters: { x: 1 } } },
      reasonHeader('two'),
    );
    expect(twice.status).toBe(400);
    expect((await suite.api.post('/api/v1/changes', { reason: 7, upsert: {} })).status).toBe(400);
    // A change set still refuses any other field it does not know.
    const unknown = await suite.api.post<ErrorBody>('/api/v1/changes', { why: 'no', upsert: {} });
    expect(unknown.body.issues?.[0]?.path).toBe('$.why');
    expect(await currentRevision()).toBe(before);
  });

  it('gives each entity its own ETag: editors of different entities never collide, of the same one do', async () => {
    const alice = await suite.api.get('/api/v1/nodes/n1');
    const bob = await suite.api.get('/api/v1/nodes/n2');
    expect(alice.etag).not.toBeNull();
    const aliceWrites = await suite.api.put(
      '/api/v1/nodes/n1',
      { ...node('n1'), properties: { team: 'a' } },
      {
        headers: { 'if-match': alice.etag ?? '' },
      },
    );
    expect(aliceWrites.status).toBe(200);
    // The configuration moved on, but not n2: Bob's ETag still holds.
    const bobWrites = await suite.api.put(
      '/api/v1/nodes/n2',
      { ...node('n2', 'relay-eu'), properties: { team: 'b' } },
      {
        headers: { 'if-match': bob.etag ?? '' },
      },
    );
    expect(bobWrites.status).toBe(200);
    expect((await suite.api.get('/api/v1/nodes/n1')).etag).toBe(aliceWrites.etag);

    // Carol read n1 before Alice wrote it: her write would lose Alice's.
    const carol = await suite.api.put('/api/v1/nodes/n1', node('n1'), {
      headers: { 'if-match': alice.etag ?? '' },
    });
    expect(carol.status).toBe(412);
    expect(carol.body).toEqual({
      statusCode: 412,
      error: 'Precondition Failed',
      message: `If-Match ${alice.etag} does not match the revision of node n1, ${aliceWrites.etag?.replaceAll('"', '')}`,
      revision: Number(aliceWrites.etag?.replaceAll('"', '')),
    });
    const staleDelete = await suite.api.delete('/api/v1/nodes/n1', {
      headers: { 'if-match': alice.etag ?? '' },
    });
    expect(staleDelete.status).toBe(412);

    // Parameters and settings alike.
    const parameter = await suite.api.get('/api/v1/parameters/dns_server');
    const settings = await suite.api.get('/api/v1/settings');
    expect((await suite.api.post('/api/v1/parameters', { name: 'other', value: 1 })).status).toBe(201);
    expect(
      (
        await suite.api.put('/api/v1/parameters/dns_server', '10.0.0.3', {
          headers: { 'if-match': parameter.etag ?? '' },
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await suite.api.put('/api/v1/parameters/dns_server', '10.0.0.4', {
          headers: { 'if-match': parameter.etag ?? '' },
        })
      ).status,
    ).toBe(412);
    expect(
      (
        await suite.api.patch(
          '/api/v1/settings',
          { orderingSeed: 9 },
          { headers: { 'if-match': settings.etag ?? '' } },
        )
      ).status,
    ).toBe(200);
    expect(
      (
        await suite.api.patch(
          '/api/v1/settings',
          { orderingSeed: 10 },
          { headers: { 'if-match': settings.etag ?? '' } },
        )
      ).status,
    ).toBe(412);

    // An entity deleted since: no ETag matches it, not even *.
    const created = await suite.api.post('/api/v1/nodes', node('n7'));
    expect(
      (await suite.api.delete('/api/v1/nodes/n7', { headers: { 'if-match': created.etag ?? '' } })).status,
    ).toBe(204);
    const gone = await suite.api.put<ErrorBody>('/api/v1/nodes/n7', node('n7'), {
      headers: { 'if-match': '*' },
    });
    expect(gone.status).toBe(412);
    expect(gone.body.message).toBe('If-Match * does not match: node n7 does not exist');

    // Whole-configuration operations keep the global revision.
    const stale = await suite.api.post(
      '/api/v1/changes',
      { upsert: { parameters: { y: 1 } } },
      {
        headers: { 'if-match': alice.etag ?? '' },
      },
    );
    expect(stale.status).toBe(412);
    const current = await currentRevision();
    expect(
      (
        await suite.api.post(
          '/api/v1/changes',
          { upsert: { parameters: { y: 1 } } },
          { headers: { 'if-match': `"${current}"` } },
        )
      ).status,
    ).toBe(200);
  });

  it('refuses the second of two concurrent writes to one entity with the same If-Match, even committed together', async () => {
    const read = await suite.api.get('/api/v1/nodes/n2');
    const writes = await Promise.all(
      ['x', 'y', 'z'].map((team) =>
        suite.api.put(
          '/api/v1/nodes/n2',
          { ...node('n2', 'relay-eu'), properties: { team } },
          {
            headers: { 'if-match': read.etag ?? '' },
          },
        ),
      ),
    );
    expect(writes.map((write) => write.status).sort()).toEqual([200, 412, 412]);
  });
});

describe('config service: the log of commits', () => {
  const lines: Record<string, unknown>[] = [];
  const suite = configServiceForSuite('cs_audit_log', {
    logger: pino(
      { level: 'info' },
      { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
    ),
  });

  it('logs each revision committed with its author, reason and counts, never a value', async () => {
    await suite.api.post(
      '/api/v1/parameters',
      { name: 'secretish', value: 'do-not-log-me' },
      {
        headers: { 'x-policygen-reason': 'a new parameter' },
      },
    );
    const committed = lines.filter((line) => line['msg'] === 'revision committed');
    expect(committed).toEqual([
      expect.objectContaining({
        revision: 1,
        author: 'bootstrap-admin',
        reason: 'a new parameter',
        counts: { parameters: { upserted: 1, deleted: 0 } },
      }),
    ]);
    expect(JSON.stringify(lines)).not.toContain('do-not-log-me');
  });
});
