import fc from 'fast-check';
import { eventIdentity, isNewer } from './event-identity';
import { MemoryIdempotencyStore, onlyNewer } from './idempotency-store';
import type { GenerationEvent } from '../contract/schemas';
import type { EventContext } from '../consumer/event-consumer';

const AT = '2026-11-24T10:00:00.000Z';
const HASH = `sha256:${'ab'.repeat(32)}`;
const context = {} as EventContext;

function result(nodeId: string, revision: number): GenerationEvent {
  return {
    schemaVersion: 1,
    type: 'generation.result',
    nodeId,
    revision,
    outcome: 'unchanged',
    hash: HASH,
    errors: [],
    durationMs: 0,
  };
}

describe('event identity', () => {
  it('is the subject and the revision, by type', () => {
    expect(eventIdentity(result('n1', 4))).toEqual({ key: 'generation.result:n1', revision: 4 });
    expect(
      eventIdentity({ schemaVersion: 1, type: 'config.change', revision: 9, committedAt: AT, changeSet: {} }),
    ).toEqual({ key: 'config.change:config', revision: 9 });
    // A node's bundles and its deletion share one subject: the later revision wins, whichever it is.
    expect(
      eventIdentity({ schemaVersion: 1, type: 'node.deleted', nodeId: 'n1', revision: 5, committedAt: AT })
        .key,
    ).toBe(
      eventIdentity({
        schemaVersion: 1,
        type: 'node.bundle',
        nodeId: 'n1',
        revision: 4,
        committedAt: AT,
        hash: HASH,
        files: [],
        manifestSha256: 'cd'.repeat(32),
      }).key,
    );
  });

  it('orders events of one subject by revision, and refuses to compare two subjects', () => {
    expect(isNewer({ key: 'k', revision: 3 }, undefined)).toBe(true);
    expect(isNewer({ key: 'k', revision: 3 }, 2)).toBe(true);
    expect(isNewer({ key: 'k', revision: 3 }, { key: 'k', revision: 3 })).toBe(false);
    expect(() => isNewer({ key: 'k', revision: 3 }, { key: 'j', revision: 1 })).toThrow(
      'not the same subject',
    );
  });
});

describe('onlyNewer', () => {
  it('handles each subject in increasing revisions whatever the delivery order and repeats', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.constantFrom('n1', 'n2', 'n3'), fc.integer({ min: 1, max: 20 })), {
          maxLength: 60,
        }),
        async (deliveries) => {
          const handled: [string, number][] = [];
          const handler = onlyNewer(new MemoryIdempotencyStore(), (event: GenerationEvent) => {
            handled.push([event.nodeId, event.revision]);
          });
          for (const [nodeId, revision] of deliveries) await handler(result(nodeId, revision), context);
          for (const nodeId of ['n1', 'n2', 'n3']) {
            const revisions = handled.filter(([node]) => node === nodeId).map(([, revision]) => revision);
            expect(revisions).toEqual([...new Set(revisions)].sort((a, b) => a - b));
            const delivered = deliveries.filter(([node]) => node === nodeId).map(([, revision]) => revision);
            expect(revisions.at(-1)).toBe(delivered.length > 0 ? Math.max(...delivered) : undefined);
          }
        },
      ),
    );
  });

  it('records nothing when the handler fails: the event is handled when it comes again', async () => {
    const store = new MemoryIdempotencyStore();
    let fail = true;
    const handled: number[] = [];
    const handler = onlyNewer(store, (event: GenerationEvent) => {
      if (fail) throw new Error('no');
      handled.push(event.revision);
    });
    await expect(handler(result('n1', 2), context)).rejects.toThrow('no');
    fail = false;
    await handler(result('n1', 2), context);
    expect(handled).toEqual([2]);
    expect(await store.lastRevision('generation.result:n1')).toBe(2);
  });
});
