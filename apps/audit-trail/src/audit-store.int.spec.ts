import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { Pool } from 'pg';
import type { DistributionConfirmedEvent, GenerationEvent } from '@policygen/sdk';
import { getTestInfrastructure } from '@policygen/testing-infra';
import { AuditStore } from './audit-store';

const AT = '2026-11-24T10:00:00.000Z';
const HASH = `sha256:${'ab'.repeat(32)}`;

function result(nodeId: string, revision: number, failed: boolean): GenerationEvent {
  return {
    schemaVersion: 1,
    type: 'generation.result',
    nodeId,
    revision,
    outcome: failed ? 'failed' : 'generated',
    hash: HASH,
    errors: failed ? [{ code: 'DEPENDENCY_CYCLE', message: 'a cycle', directiveIds: ['a', 'b'] }] : [],
    durationMs: 1,
  };
}

function confirmed(nodeId: string, relayId: string, revision: number): DistributionConfirmedEvent {
  return {
    schemaVersion: 1,
    type: 'distribution.confirmed',
    relayId,
    nodeId,
    hash: HASH,
    revision,
    committedAt: AT,
    generatedAt: AT,
    distributedAt: AT,
    confirmedAt: AT,
    lagMs: 12,
  };
}

describe('the audit store on real Postgres', () => {
  const pool = new Pool({ connectionString: getTestInfrastructure().databaseUrl });
  const schemas: string[] = [];
  afterAll(async () => {
    for (const schema of schemas) await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await pool.end();
  });

  async function freshStore(): Promise<AuditStore> {
    const schema = `audit_${randomBytes(5).toString('hex')}`;
    schemas.push(schema);
    const store = new AuditStore(pool, schema);
    await store.migrate();
    await store.migrate();
    return store;
  }

  it('never moves a node backwards, whatever the order and the repeats: the latest revision decides', async () => {
    const store = await freshStore();
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.constantFrom('a', 'b', 'c'), fc.integer({ min: 1, max: 12 }), fc.boolean()), {
          minLength: 1,
          maxLength: 30,
        }),
        fc.array(
          fc.tuple(fc.constantFrom('a', 'b'), fc.constantFrom('root', 'eu'), fc.integer({ min: 1, max: 12 })),
        ),
        async (results, deliveries) => {
          run += 1;
          // Each run its own nodes; one outcome per (node, revision), as the generator gives it.
          const node = (name: string) => `${name}-${run}`;
          const outcome = (name: string, revision: number) =>
            results.find(([other, at]) => other === name && at === revision)?.[2] ?? false;
          for (const [name, revision] of [...results, ...results.slice(0, 5)])
            await store.recordResult(result(node(name), revision, outcome(name, revision)));
          for (const [name, relay, revision] of [...deliveries, ...deliveries.slice(0, 3)])
            await store.recordDelivery(confirmed(node(name), relay, revision));

          const failing = new Set((await store.failingNow()).map((failure) => failure.nodeId));
          for (const name of new Set(results.map(([other]) => other))) {
            const latest = Math.max(
              ...results.filter(([other]) => other === name).map(([, revision]) => revision),
            );
            expect(await store.latestResult(node(name))).toEqual({
              revision: latest,
              outcome: outcome(name, latest) ? 'failed' : 'generated',
            });
            expect(failing.has(node(name))).toBe(outcome(name, latest));
          }
          for (const name of new Set(deliveries.map(([other]) => other))) {
            const expected: Record<string, number> = {};
            for (const [other, relay, revision] of deliveries)
              if (other === name) expected[relay] = Math.max(expected[relay] ?? 0, revision);
            expect(await store.deliveredRevisions(node(name))).toEqual(expected);
          }
        },
      ),
      { numRuns: 25 },
    );
  }, 120_000);

  it('keeps the failure history, and names the codes of the nodes failing now', async () => {
    const store = await freshStore();
    await store.recordResult(result('db-1', 4, true));
    await store.recordResult(result('db-2', 4, true));
    await store.recordResult(result('db-2', 5, false));
    expect(await store.failingNow()).toEqual([{ nodeId: 'db-1', revision: 4, codes: ['DEPENDENCY_CYCLE'] }]);
  });

  it('refuses a schema name that is not a plain identifier', () => {
    expect(() => new AuditStore(pool, 'audit; DROP TABLE x')).toThrow('AUDIT_SCHEMA');
  });
});
