import fc from 'fast-check';
import type { DistributionEvent, GenerationEvent, PipelineSummary } from '@policygen/events';
import { TOPICS, distributionSummaries, generationSummaries, parseEvent } from '@policygen/events';
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

/** A summary as the config-service reads it: through JSON and its schema. */
function received(summary: PipelineSummary): PipelineSummary {
  const parsed = parseEvent(TOPICS.pipelineSummaries, JSON.stringify(summary));
  if (!parsed.ok) throw new Error(`an unreadable summary: ${JSON.stringify(parsed.issues)}`);
  return parsed.event;
}

/** Feeds the view a generator's batch of results of one revision, as the generator summarises it. */
function generate(
  pipeline: PipelineView,
  events: GenerationEvent | readonly GenerationEvent[],
  now?: number,
  options: { catchUp?: boolean; maxBytes?: number } = {},
): void {
  const batch = Array.isArray(events) ? (events as readonly GenerationEvent[]) : [events as GenerationEvent];
  const stamp = { revision: batch[0]?.revision ?? 0, committedAt: at(0), catchUp: options.catchUp ?? false };
  const limit = options.maxBytes === undefined ? {} : { maxBytes: options.maxBytes };
  for (const summary of generationSummaries(stamp, batch, { batchId: 'g', ...limit }))
    pipeline.generationSummary(received(summary) as typeof summary, now);
}

/** Feeds the view a batch of distribution events, as the distribution-service summarises it. */
function distribute(
  pipeline: PipelineView,
  events: DistributionEvent | readonly DistributionEvent[],
  now?: number,
  maxBytes?: number,
): void {
  const batch = Array.isArray(events)
    ? (events as readonly DistributionEvent[])
    : [events as DistributionEvent];
  for (const summary of distributionSummaries(batch, { batchId: 'd', ...(maxBytes ? { maxBytes } : {}) }))
    pipeline.distributionSummary(received(summary) as typeof summary, now);
}

describe('PipelineView', () => {
  const paths: Record<string, string[]> = { n1: ['root', 'eu'], n2: ['root'], n3: ['root', 'eu'] };
  const view = (): PipelineView => new PipelineView((nodeId) => paths[nodeId] ?? []);

  it("follows a node's bundle to each relay and to the node, and what each relay still owes", () => {
    const pipeline = view();
    generate(pipeline, generated('n1', 2, HASH_A), T0 + 10);
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
    distribute(pipeline, confirmed('root', 'n1', 2, HASH_A, 80), T0 + 100);
    expect(pipeline.revisions()).toEqual({ generated: 2, distributed: 2 });
    distribute(pipeline, confirmed('eu', 'n1', 2, HASH_A, 120), T0 + 130);
    distribute(
      pipeline,
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
    generate(pipeline, generated('n1', 3, HASH_B), T0 + 600);
    expect(pipeline.nodeStatus('n1', 3, true)?.relays.every((relay) => !relay.current)).toBe(true);
    expect(pipeline.revisions()).toEqual({ generated: 3, distributed: 2 });
  });

  it('keeps a failure with the last good revision, and clears it when the node generates again', () => {
    const pipeline = view();
    generate(pipeline, generated('n2', 1, HASH_A));
    generate(pipeline, generated('n2', 2, HASH_A, 'failed'));
    expect(pipeline.nodeStatus('n2', 2, true)).toMatchObject({
      generation: { outcome: 'failed', hash: HASH_A, lastGoodRevision: 1 },
      failure: { code: 'MISSING_DEPENDENCY', directiveIds: ['d1'], sinceRevision: 2 },
    });
    expect(pipeline.failures.page({ limit: 10, directiveId: 'd1' }).total).toBe(1);
    generate(pipeline, generated('n2', 3, HASH_B));
    expect(pipeline.nodeStatus('n2', 3, true)?.failure).toBeNull();
    expect(pipeline.failures.count).toBe(0);
    expect(pipeline.nodeStatus('nobody', 3, false)).toBeNull();
  });

  it('gives percentiles per stage over the window, a catch-up apart, old samples out', () => {
    const pipeline = view();
    for (let index = 1; index <= 100; index++) {
      const nodeId = `n${index}`;
      distribute(pipeline, confirmed('root', nodeId, 2, HASH_A, index * 10), T0 + 1_000);
    }
    distribute(pipeline, confirmed('root', 'late', 1, HASH_B, 90_000, true), T0 + 1_000);
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

  it('tells from summaries what it tells from the per-node events one by one', () => {
    const nodeIds = ['n1', 'n2', 'n3', 'n4'];
    const relayIds = ['root', 'eu', 'us'];
    const tree: Record<string, string[]> = { n1: ['root', 'eu'], n2: ['root'], n3: ['root', 'us'], n4: [] };
    const hashes = [HASH_A, HASH_B, `sha256:${'c'.repeat(64)}`];
    const error = fc.record({
      code: fc.constantFrom('MISSING_DEPENDENCY', 'DEPENDENCY_CYCLE'),
      message: fc.constantFrom('no', 'a cycle'),
      directiveIds: fc.constantFrom(['d1'], ['d1', 'd2']).map((ids) => [...ids]),
    });
    const generationBatch = fc.record({
      kind: fc.constant('generation' as const),
      revision: fc.integer({ min: 1, max: 6 }),
      catchUp: fc.boolean(),
      results: fc.uniqueArray(
        fc.record({
          nodeId: fc.constantFrom(...nodeIds),
          outcome: fc.constantFrom('generated', 'unchanged', 'failed'),
          hash: fc.option(fc.constantFrom(...hashes), { nil: null }),
          errors: fc.array(error, { minLength: 1, maxLength: 2 }),
        }),
        { selector: (result) => result.nodeId, minLength: 1 },
      ),
    });
    const distributionEvent = fc.record({
      fetched: fc.boolean(),
      relayId: fc.constantFrom(...relayIds),
      nodeId: fc.constantFrom(...nodeIds),
      revision: fc.integer({ min: 1, max: 6 }),
      hash: fc.constantFrom(...hashes),
      committed: fc.integer({ min: 0, max: 5_000 }),
      steps: fc.tuple(fc.nat(400), fc.nat(400), fc.nat(400)),
      catchUp: fc.boolean(),
    });
    const distributionBatch = fc.record({
      kind: fc.constant('distribution' as const),
      events: fc.array(distributionEvent, { minLength: 1, maxLength: 8 }),
    });
    const batches = fc.array(
      fc.record({
        batch: fc.oneof(generationBatch, distributionBatch),
        advance: fc.nat(3_000),
        // Small budgets split a batch into several summaries.
        maxBytes: fc.constantFrom(undefined, 1, 600),
      }),
      { maxLength: 25 },
    );

    fc.assert(
      fc.property(batches, (steps) => {
        const paths = (nodeId: string): readonly string[] => tree[nodeId] ?? [];
        const oneByOne = new PipelineView(paths);
        const summarised = new PipelineView(paths);
        let now = T0 + 10_000;
        for (const { batch, advance, maxBytes } of steps) {
          now += advance;
          if (batch.kind === 'generation') {
            const events = batch.results.map((result): GenerationEvent => ({
              schemaVersion: 1,
              type: 'generation.result',
              nodeId: result.nodeId,
              revision: batch.revision,
              outcome: result.outcome,
              hash: result.hash,
              errors: result.outcome === 'failed' ? result.errors : [],
              durationMs: 1,
            }));
            for (const event of events) oneByOne.generation(event, now);
            generate(summarised, events, now, {
              catchUp: batch.catchUp,
              ...(maxBytes === undefined ? {} : { maxBytes }),
            });
          } else {
            const events = batch.events.map((event): DistributionEvent => {
              const [toGenerated, toDistributed, toConfirmed] = event.steps;
              const base = {
                schemaVersion: 1 as const,
                relayId: event.relayId,
                nodeId: event.nodeId,
                hash: event.hash,
                revision: event.revision,
                committedAt: at(event.committed),
                ...(event.catchUp ? { catchUp: true } : {}),
              };
              const done = event.committed + toGenerated + toDistributed + toConfirmed;
              return event.fetched
                ? { ...base, type: 'node.fetched', fetchedAt: at(done), lagMs: done - event.committed }
                : {
                    ...base,
                    type: 'distribution.confirmed',
                    generatedAt: at(event.committed + toGenerated),
                    distributedAt: at(event.committed + toGenerated + toDistributed),
                    confirmedAt: at(done),
                    lagMs: done - event.committed,
                  };
            });
            for (const event of events) oneByOne.distribution(event, now);
            distribute(summarised, events, now, maxBytes);
          }
        }
        const answers = (view: PipelineView) => ({
          nodes: [...nodeIds, 'nobody'].map((nodeId) => view.nodeStatus(nodeId, 7, nodeId !== 'nobody')),
          failures: view.failures.page({ limit: 100 }),
          byCode: [...view.failures.byCode()],
          progress: [0, 1, 2, 3, 4, 5, 6, 7].map((revision) => view.revisionProgress(revision)),
          relays: view.relays(
            relayIds.map((relayId) => ({ relayId, parentId: relayId === 'root' ? null : 'root' })),
            () => 1,
          ),
          revisions: view.revisions(),
          lag: [view.lag(60, now), view.lag(600, now)],
          throughput: view.throughput(now),
        });
        expect(answers(summarised)).toEqual(answers(oneByOne));
      }),
      { numRuns: 300 },
    );
  });
});
