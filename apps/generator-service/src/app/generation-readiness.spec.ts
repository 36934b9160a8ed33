import type { GenerationEvent } from '@policygen/events';
import type { GenerationStatus } from '../generation/generation-loop';
import { NO_SHARE_YET } from '../generation/generation-loop';
import { NodeFailures } from '@policygen/events';
import { generationReadiness } from './generation-readiness';

function statusWith(overrides: Partial<GenerationStatus>): GenerationStatus {
  return {
    ready: true,
    caughtUp: true,
    revision: 3,
    ownership: 'every node',
    held: 40,
    pending: 0,
    queued: 0,
    cycles: 5,
    lastCycle: null,
    failing: null,
    ...overrides,
  };
}

const since = '2026-11-24T00:00:00.000Z';

describe('the generator readiness', () => {
  it('waits for its share of the nodes, then for the configuration, then for the catch-up', () => {
    const none = new NodeFailures();
    expect(
      generationReadiness(statusWith({ ready: false, caughtUp: false, ownership: NO_SHARE_YET }), none),
    ).toMatchObject({
      ready: false,
      reason: 'waiting for its share of the nodes (the consumer group assigns it)',
    });
    expect(generationReadiness(statusWith({ ready: false, caughtUp: false }), none)).toMatchObject({
      ready: false,
      reason: 'loading the configuration from the config service',
    });
    expect(generationReadiness(statusWith({ caughtUp: false, pending: 120 }), none)).toMatchObject({
      ready: false,
      reason: 'catching up: 120 nodes to generate at revision 3',
    });
    expect(generationReadiness(statusWith({}), none)).toMatchObject({ ready: true });
  });

  it('stays ready after one failure a retry may mend; not after failures in a row, nor a refusal for good', () => {
    const none = new NodeFailures();
    const once = { since, consecutiveFailures: 1, error: 'broker away', retriable: true };
    expect(generationReadiness(statusWith({ failing: once }), none).ready).toBe(true);
    const often = { ...once, consecutiveFailures: 3 };
    expect(generationReadiness(statusWith({ failing: often }), none)).toMatchObject({
      ready: false,
      reason: expect.stringContaining('broker away'),
    });
    const refused = { since, consecutiveFailures: 1, error: 'not allowed', retriable: false };
    expect(generationReadiness(statusWith({ failing: refused }), none).ready).toBe(false);
  });

  it('is degraded, still ready, while nodes fail, with their count by code', () => {
    const failures = new NodeFailures();
    const failed = (nodeId: string, code: string): GenerationEvent => ({
      schemaVersion: 1,
      type: 'generation.result',
      nodeId,
      revision: 4,
      outcome: 'failed',
      hash: null,
      errors: [{ code, message: code }],
      durationMs: 1,
    });
    failures.record([
      failed('a', 'MISSING_DEPENDENCY'),
      failed('b', 'MISSING_DEPENDENCY'),
      failed('c', 'DEPENDENCY_CYCLE'),
    ]);
    expect(generationReadiness(statusWith({}), failures)).toMatchObject({
      ready: true,
      degraded: true,
      details: { failingNodes: 3, failuresByCode: { DEPENDENCY_CYCLE: 1, MISSING_DEPENDENCY: 2 } },
    });
  });
});
