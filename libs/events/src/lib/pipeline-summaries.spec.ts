import type { DistributionConfirmedEvent, DistributionEvent, GenerationEvent } from '@policygen/sdk/contract';
import { TOPICS, parseEvent } from '@policygen/sdk/contract';
import fc from 'fast-check';
import {
  SUMMARY_MAX_BYTES,
  distributionSummaries,
  generationSummaries,
  plainPipelineSummary,
  readPipelineSummary,
} from './pipeline-summaries';

const HASH = `sha256:${'ab'.repeat(32)}`;
const AT = '2026-11-24T10:00:00.000Z';
const at = (ms: number): string => new Date(Date.parse(AT) + ms).toISOString();

function result(index: number): GenerationEvent {
  const failed = index % 7 === 3;
  return {
    schemaVersion: 1,
    type: 'generation.result',
    nodeId: `node-${String(index).padStart(6, '0')}`,
    revision: 12,
    outcome: failed ? 'failed' : index % 2 === 0 ? 'generated' : 'unchanged',
    hash: failed && index % 3 === 0 ? null : HASH,
    errors: failed
      ? [
          {
            code: 'MISSING_DEPENDENCY',
            message: `no dependency ${'x'.repeat(index % 50)}`,
            directiveIds: ['d1'],
          },
        ]
      : [],
    durationMs: 1.5,
  };
}

function distributed(index: number): DistributionEvent {
  const base = {
    schemaVersion: 1 as const,
    relayId: index % 3 === 0 ? 'root' : 'relay-eu',
    nodeId: `node-${index}`,
    hash: HASH,
    revision: 10 + (index % 4),
    committedAt: at(0),
  };
  return index % 5 === 0
    ? { ...base, type: 'node.fetched', fetchedAt: at(900), lagMs: 900, catchUp: true }
    : {
        ...base,
        type: 'distribution.confirmed',
        generatedAt: at(20),
        distributedAt: at(45),
        confirmedAt: at(120 + index),
        lagMs: 120 + index,
      };
}

describe('generation summaries', () => {
  it("carry a batch's results once each, in order, failures with their errors, valid against the schema", () => {
    const events = Array.from({ length: 40 }, (_, index) => result(index));
    const [summary, ...more] = generationSummaries({ revision: 12, committedAt: AT, catchUp: true }, events, {
      batchId: 'b1',
      at: at(50),
    });
    expect(more).toEqual([]);
    expect(summary).toMatchObject({
      type: 'generation.summary',
      batchId: 'b1',
      revision: 12,
      committedAt: AT,
      generatedAt: at(50),
      catchUp: true,
    });
    expect(summary?.results).toEqual(events.map((event) => [event.nodeId, event.outcome, event.hash]));
    expect(summary?.failures).toEqual(
      events
        .filter((event) => event.outcome === 'failed')
        .map((event) => ({ nodeId: event.nodeId, errors: event.errors })),
    );
    expect(parseEvent(TOPICS.pipelineSummaries, JSON.stringify(summary))).toEqual({
      ok: true,
      event: summary,
    });
  });

  it('split a batch over the budget into several summaries, each under it, every node in one of them', () => {
    const events = Array.from({ length: 8_000 }, (_, index) => result(index));
    const summaries = generationSummaries({ revision: 12, committedAt: AT }, events, { batchId: 'b' });
    expect(summaries.length).toBeGreaterThan(1);
    for (const summary of summaries) {
      expect(JSON.stringify(summary).length).toBeLessThanOrEqual(SUMMARY_MAX_BYTES);
      expect(summary.catchUp).toBeUndefined();
    }
    expect(summaries.map((summary) => summary.batchId)).toEqual(summaries.map((_, index) => `b:${index}`));
    expect(summaries.flatMap((summary) => summary.results.map(([nodeId]) => nodeId))).toEqual(
      events.map((event) => event.nodeId),
    );
    expect(summaries.flatMap((summary) => summary.failures).length).toBe(
      events.filter((event) => event.outcome === 'failed').length,
    );
  });
});

describe('distribution summaries', () => {
  it('carry confirmations and fetch reports as tuples, times in epoch ms, the newest revision once', () => {
    const events = Array.from({ length: 20 }, (_, index) => distributed(index));
    const [summary, ...more] = distributionSummaries(events, { batchId: 'd1', at: at(1_000) });
    expect(more).toEqual([]);
    expect(summary).toMatchObject({
      type: 'distribution.summary',
      batchId: 'd1',
      revision: 13,
      publishedAt: at(1_000),
    });
    const committed = Date.parse(AT);
    expect(summary?.confirmed).toEqual(
      events
        .filter((event): event is DistributionConfirmedEvent => event.type === 'distribution.confirmed')
        .map((event) => [
          event.relayId,
          event.nodeId,
          event.revision,
          HASH,
          committed,
          committed + 20,
          committed + 45,
          Date.parse(event.confirmedAt),
          false,
        ]),
    );
    expect(summary?.fetched).toEqual(
      events
        .filter((event) => event.type === 'node.fetched')
        .map((event) => [
          event.relayId,
          event.nodeId,
          event.revision,
          HASH,
          committed,
          committed + 900,
          true,
        ]),
    );
    expect(parseEvent(TOPICS.pipelineSummaries, JSON.stringify(summary))).toEqual({
      ok: true,
      event: summary,
    });
  });

  it('split a batch over the budget, each summary under it, every event in one of them', () => {
    const events = Array.from({ length: 6_000 }, (_, index) => distributed(index));
    const summaries = distributionSummaries(events, { batchId: 'd' });
    expect(summaries.length).toBeGreaterThan(1);
    for (const summary of summaries)
      expect(JSON.stringify(summary).length).toBeLessThanOrEqual(SUMMARY_MAX_BYTES);
    expect(
      summaries.reduce((count, summary) => count + summary.confirmed.length + summary.fetched.length, 0),
    ).toBe(events.length);
  });
});

describe('reading a summary', () => {
  const generation = generationSummaries(
    { revision: 12, committedAt: AT },
    Array.from({ length: 12 }, (_, index) => result(index)).filter((event) => event.outcome !== 'failed'),
    { batchId: 'g', at: at(5) },
  )[0];
  const withFailure = generationSummaries(
    { revision: 12, committedAt: AT, catchUp: true },
    Array.from({ length: 6 }, (_, index) => result(index)),
    { batchId: 'f', at: at(5) },
  )[0];
  const distribution = distributionSummaries(
    Array.from({ length: 6 }, (_, index) => distributed(index)),
    { batchId: 'd', at: at(5) },
  )[0];

  it('takes what the producers write without the schema, the schema for failures, refuses the rest', () => {
    expect(plainPipelineSummary(JSON.parse(JSON.stringify(generation)))).toEqual(generation);
    expect(plainPipelineSummary(JSON.parse(JSON.stringify(distribution)))).toEqual(distribution);
    expect(plainPipelineSummary(JSON.parse(JSON.stringify(withFailure)))).toBeUndefined();
    expect(readPipelineSummary(JSON.stringify(withFailure))).toEqual({ ok: true, summary: withFailure });
    expect(readPipelineSummary('{"type":')).toEqual({
      ok: false,
      issues: [{ path: '$', message: expect.stringMatching(/^not JSON: /) }],
    });
    const broken = readPipelineSummary(JSON.stringify({ ...distribution, confirmed: [['root', 'n1']] }));
    expect(broken.ok).toBe(false);
    expect(broken.ok ? [] : broken.issues.map((issue) => issue.path)).toContain('$.confirmed[0]');
  });

  it('is never looser than the schema: what the hand check takes, the schema takes too', () => {
    const odd = fc.constantFrom<unknown>(
      undefined,
      null,
      -1,
      1.5,
      0,
      2 ** 60,
      '',
      'x',
      true,
      HASH,
      HASH.toUpperCase(),
      AT,
      '2026-02-30T10:00:00.000Z',
      '2026-11-24T10:00:00Z',
      [],
      {},
      'generated',
      'failed',
    );
    const summaries = fc.constantFrom<Record<string, unknown>>(
      generation as unknown as Record<string, unknown>,
      withFailure as unknown as Record<string, unknown>,
      distribution as unknown as Record<string, unknown>,
    );
    // A value with one place replaced: a field, a tuple, or an element of a tuple.
    const mutated = fc
      .tuple(summaries, fc.nat(), fc.nat(), fc.nat(10), odd)
      .map(([summary, field, item, element, replacement]) => {
        const copy = JSON.parse(JSON.stringify(summary)) as Record<string, unknown>;
        const keys = [...Object.keys(copy), 'added'];
        const key = keys[field % keys.length] as string;
        const list = copy[key];
        if (Array.isArray(list) && list.length > 0) {
          const index = item % list.length;
          const tuple = list[index] as unknown;
          if (Array.isArray(tuple) && element < tuple.length + 1) tuple[element] = replacement;
          else list[index] = replacement;
        } else copy[key] = replacement;
        return copy;
      });
    let taken = 0;
    fc.assert(
      fc.property(mutated, (value) => {
        const fast = plainPipelineSummary(value);
        if (fast !== undefined) taken++;
        expect(fast === undefined || parseEvent(TOPICS.pipelineSummaries, value).ok).toBe(true);
      }),
      { numRuns: 2_000 },
    );
    // Many mutations leave a summary valid (a boolean for a boolean, a field added): the check is tried.
    expect(taken).toBeGreaterThan(50);
  });
});
