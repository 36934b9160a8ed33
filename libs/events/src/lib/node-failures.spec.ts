import type { GenerationEvent } from '@policygen/sdk/contract';
import { NodeFailures } from './node-failures';

function result(
  nodeId: string,
  revision: number,
  outcome: GenerationEvent['outcome'],
  errors: GenerationEvent['errors'] = [],
): GenerationEvent {
  return {
    schemaVersion: 1,
    type: 'generation.result',
    nodeId,
    revision,
    outcome,
    hash: outcome === 'failed' && revision === 0 ? null : `sha256:${'a'.repeat(64)}`,
    errors,
    durationMs: 1,
  };
}

const missing = {
  code: 'MISSING_DEPENDENCY',
  message: 'Could not find dependency Directive[b] for Directive[a]',
  directiveIds: ['a', 'b'],
  ruleIds: ['r1'],
};

describe('NodeFailures', () => {
  it('keeps a failure with its first revision and the last good one, and clears it on success', () => {
    const failures = new NodeFailures();
    failures.record([result('n1', 3, 'generated'), result('n2', 3, 'unchanged')]);
    failures.record([result('n1', 4, 'failed', [missing])], new Date('2026-11-24T10:00:00Z'));
    failures.record([result('n1', 5, 'failed', [missing])], new Date('2026-11-24T10:05:00Z'));
    expect(failures.of('n1')).toEqual({
      nodeId: 'n1',
      code: 'MISSING_DEPENDENCY',
      message: missing.message,
      directiveIds: ['a', 'b'],
      ruleIds: ['r1'],
      sinceRevision: 4,
      since: '2026-11-24T10:00:00.000Z',
      lastGoodRevision: 3,
    });
    expect(failures.byCode()).toEqual(new Map([['MISSING_DEPENDENCY', 1]]));
    failures.record([result('n1', 6, 'generated')]);
    expect(failures.of('n1')).toBeUndefined();
    expect(failures.count).toBe(0);
  });

  it('starts a failure again when its error changes, and forgets nodes that left', () => {
    const failures = new NodeFailures();
    failures.record([result('n1', 4, 'failed', [missing])]);
    const cycle = { code: 'DEPENDENCY_CYCLE', message: 'Found 1 dependency cycle:', directiveIds: ['a'] };
    failures.record([result('n1', 7, 'failed', [cycle])]);
    expect(failures.of('n1')).toMatchObject({
      code: 'DEPENDENCY_CYCLE',
      sinceRevision: 7,
      lastGoodRevision: null,
    });
    failures.record([result('n2', 7, 'failed', [cycle])]);
    failures.forget(['n1']);
    failures.retain((nodeId) => nodeId !== 'n2');
    expect(failures.count).toBe(0);
  });
});

describe('NodeFailures.page', () => {
  const failures = new NodeFailures();
  const cycle = {
    code: 'DEPENDENCY_CYCLE',
    message: 'Found 1 dependency cycle:',
    directiveIds: ['c'],
    ruleIds: ['r2'],
  };
  failures.record([
    result('n3', 4, 'failed', [missing]),
    result('n1', 4, 'failed', [missing]),
    result('n2', 4, 'failed', [cycle]),
    result('n4', 4, 'failed', [missing]),
  ]);

  it('pages in node id order, filtered by code, directive or rule', () => {
    const first = failures.page({ limit: 2 });
    expect(first.items.map((failure) => failure.nodeId)).toEqual(['n1', 'n2']);
    expect(first).toMatchObject({ total: 4, next: 'n2' });
    const second = failures.page({ limit: 2, after: first.next ?? undefined });
    expect(second.items.map((failure) => failure.nodeId)).toEqual(['n3', 'n4']);
    expect(second.next).toBeNull();
    expect(failures.page({ limit: 10, code: 'DEPENDENCY_CYCLE' }).items.map((f) => f.nodeId)).toEqual(['n2']);
    expect(failures.page({ limit: 10, directiveId: 'b' }).total).toBe(3);
    expect(failures.page({ limit: 10, ruleId: 'r2' }).items.map((f) => f.nodeId)).toEqual(['n2']);
    expect(failures.page({ limit: 10, after: 'n9' })).toEqual({ total: 4, items: [], next: null });
  });
});
