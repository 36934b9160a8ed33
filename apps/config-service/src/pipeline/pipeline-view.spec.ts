import type { DistributionEvent, GenerationEvent } from '@policygen/events';
import { PipelineView } from './pipeline-view';

const HASH_A = `sha256:${'a'.repeat(64)}`;
const HASH_B = `sha256:${'b'.repeat(64)}`;
const T0 = Date.parse('2026-11-24T10:00:00.000Z');
const at = (ms: number): string => new Date(T0 + ms).toISOString();

function generated(
  nodeId: string,
  revision: number,
  hash: string | null,
  outcome: GenerationEvent['outcome'] = 'generated',
): GenerationEvent {
  return {
    schemaVersion: 1,
    type: 'generation.result',
    nodeId,
    revision,
    outcome,
    hash,
    errors: outcome === 'failed' ? [{ code: 'MISSING_DEPENDENCY', message: 'no', directiveIds: ['d1'] }] : [],
    durationMs: 1,
  };
}

function confirmed(
  relayId: string,
  nodeId: string,
  revision: number,
  hash: string,
  lagMs: number,
  catchUp = false,
): DistributionEvent {
  return {
    schemaVersion: 1,
    type: 'distribution.confirmed',
    relayId,
    nodeId,
    hash,
    revision,
    committedAt: at(0),
    generatedAt: at(lagMs / 4),
    distributedAt: at(lagMs / 2),
    confirmedAt: at(lagMs),
    lagMs,
    ...(catchUp ? { catchUp } : {}),
  };
}

describe('PipelineView', () => {
  const paths: Record<string, string[]> = { n1: ['root', 'eu'], n2: ['root'], n3: ['root', 'eu'] };
  const view = (): PipelineView => new PipelineView((nodeId) => paths[nodeId] ?? []);

  it("follows a node's bundle to each relay and to the node, and what each relay still owes", () => {
    const pipeline = view();
    pipeline.generation(generated('n1', 2, HASH_A), T0 + 10);
    expect(
      pipeline.relays(
        [
          { relayId: 'root', parentId: null },
          { relayId: 'eu', parentId: 'root' },
        ],
        () => 1,
      ),
    ).toMatchObject([
      { relayId: 'root', behind: 1, revision: 0 },
      { relayId: 'eu', behind: 1, revision: 0 },
    ]);
    pipeline.distribution(confirmed('root', 'n1', 2, HASH_A, 80), T0 + 100);
    expect(pipeline.revisions()).toEqual({ generated: 2, distributed: 2 });
    pipeline.distribution(confirmed('eu', 'n1', 2, HASH_A, 120), T0 + 130);
    pipeline.distribution(
      {
        schemaVersion: 1,
        type: 'node.fetched',
        relayId: 'eu',
        nodeId: 'n1',
        hash: HASH_A,
        revision: 2,
        committedAt: at(0),
        fetchedAt: at(500),
        lagMs: 500,
      },
      T0 + 500,
    );
    const status = pipeline.nodeStatus('n1', 2, true);
    expect(status?.relays).toEqual([
      { relayId: 'root', revision: 2, hash: HASH_A, confirmedAt: at(80), current: true },
      { relayId: 'eu', revision: 2, hash: HASH_A, confirmedAt: at(120), current: true },
    ]);
    expect(status?.fetched).toEqual({
      relayId: 'eu',
      revision: 2,
      hash: HASH_A,
      fetchedAt: at(500),
      current: true,
    });
    expect(pipeline.relays([{ relayId: 'eu', parentId: 'root' }], () => 2)[0]).toMatchObject({
      behind: 0,
      revision: 2,
    });
    expect(pipeline.revisionProgress(2)).toEqual({
      revision: 2,
      generated: 1,
      unchanged: 0,
      failed: 0,
      relays: [
        { relayId: 'eu', delivered: 1 },
        { relayId: 'root', delivered: 1 },
      ],
    });
    // A newer bundle: owed again until confirmed.
    pipeline.generation(generated('n1', 3, HASH_B), T0 + 600);
    expect(pipeline.nodeStatus('n1', 3, true)?.relays.every((relay) => !relay.current)).toBe(true);
    expect(pipeline.revisions()).toEqual({ generated: 3, distributed: 2 });
  });

  it('keeps a failure with the last good revision, and clears it when the node generates again', () => {
    const pipeline = view();
    pipeline.generation(generated('n2', 1, HASH_A));
    pipeline.generation(generated('n2', 2, HASH_A, 'failed'));
    expect(pipeline.nodeStatus('n2', 2, true)).toMatchObject({
      generation: { outcome: 'failed', hash: HASH_A, lastGoodRevision: 1 },
      failure: { code: 'MISSING_DEPENDENCY', directiveIds: ['d1'], sinceRevision: 2 },
    });
    expect(pipeline.failures.page({ limit: 10, directiveId: 'd1' }).total).toBe(1);
    pipeline.generation(generated('n2', 3, HASH_B));
    expect(pipeline.nodeStatus('n2', 3, true)?.failure).toBeNull();
    expect(pipeline.failures.count).toBe(0);
    expect(pipeline.nodeStatus('nobody', 3, false)).toBeNull();
  });

  it('gives percentiles per stage over the window, a catch-up apart, old samples out', () => {
    const pipeline = view();
    for (let index = 1; index <= 100; index++) {
      const nodeId = `n${index}`;
      pipeline.distribution(confirmed('root', nodeId, 2, HASH_A, index * 10), T0 + 1_000);
    }
    pipeline.distribution(confirmed('root', 'late', 1, HASH_B, 90_000, true), T0 + 1_000);
    const lag = pipeline.lag(60, T0 + 2_000);
    expect(lag.steady.find((stage) => stage.stage === 'relay')).toEqual({
      stage: 'relay',
      count: 100,
      p50: 500,
      p95: 950,
      p99: 990,
      max: 1000,
    });
    expect(lag.steady.find((stage) => stage.stage === 'generated')).toMatchObject({
      count: 100,
      p50: 125,
      max: 250,
    });
    expect(lag.catchUp.find((stage) => stage.stage === 'relay')).toMatchObject({ count: 1, p99: 90_000 });
    expect(pipeline.lag(60, T0 + 120_000).steady.every((stage) => stage.count === 0)).toBe(true);
  });
});
