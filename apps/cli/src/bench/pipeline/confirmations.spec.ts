import fc from 'fast-check';
import type { DistributionConfirmedEvent } from '@policygen/events';
import { ConfirmationLog } from './confirmations';

const NODES = ['a', 'b', 'c', 'd', 'e', 'f'];

function confirmed(nodeId: string, revision: number, confirmedAt: number): DistributionConfirmedEvent {
  const at = new Date(confirmedAt).toISOString();
  return {
    relayId: 'root',
    nodeId,
    revision,
    hash: `h${revision}`,
    committedAt: at,
    generatedAt: at,
    distributedAt: at,
    confirmedAt: at,
  } as DistributionConfirmedEvent;
}

const confirmation = fc.record({
  nodeId: fc.constantFrom(...NODES),
  revision: fc.integer({ min: 1, max: 8 }),
  confirmedAt: fc.integer({ min: 0, max: 1_000_000 }),
});

describe('ConfirmationLog arrival counting', () => {
  it('counts an import as the brute-force filter does, whatever the order and when tracking starts', () => {
    fc.assert(
      fc.property(
        fc.array(confirmation, { maxLength: 40 }),
        fc.subarray(NODES),
        fc.integer({ min: 1, max: 8 }),
        fc.nat(),
        (events, expected, revision, start) => {
          const log = new ConfirmationLog('root');
          const startAt = start % (events.length + 1);
          events
            .slice(0, startAt)
            .forEach((event) => log.record(confirmed(event.nodeId, event.revision, event.confirmedAt)));
          const tracker = log.trackImport(revision, expected);
          const bruteForce = (): string[] =>
            expected.filter((nodeId) => !log.firstAtOrAfter(nodeId, revision));
          expect(tracker.missingCount).toBe(bruteForce().length);
          for (const event of events.slice(startAt)) {
            log.record(confirmed(event.nodeId, event.revision, event.confirmedAt));
            expect(tracker.missingCount).toBe(bruteForce().length);
          }
          expect([...tracker.missingNodes()].sort()).toEqual(bruteForce().sort());
          expect(tracker.arrivedCount + tracker.missingCount).toBe(expected.length);
        },
      ),
    );
  });

  it('records the time of the confirmation that made a node arrive', () => {
    const log = new ConfirmationLog('root');
    const tracker = log.trackImport(3, ['a', 'b']);
    log.record(confirmed('a', 2, 1_000));
    log.record(confirmed('a', 3, 2_000));
    log.record(confirmed('a', 4, 3_000));
    expect(tracker.arrivals).toEqual(new Map([['a', 2_000]]));
    expect(tracker.missingCount).toBe(1);
  });

  it('counts change sets wholly arrived as the brute-force filter does', () => {
    const changeSet = fc.record({
      revision: fc.integer({ min: 1, max: 8 }),
      nodes: fc.array(fc.constantFrom(...NODES), { maxLength: 6 }),
    });
    fc.assert(
      fc.property(
        fc.array(confirmation, { maxLength: 40 }),
        fc.array(changeSet, { maxLength: 6 }),
        fc.nat(),
        (events, changeSets, start) => {
          const log = new ConfirmationLog('root');
          const startAt = start % (events.length + 1);
          events
            .slice(0, startAt)
            .forEach((event) => log.record(confirmed(event.nodeId, event.revision, event.confirmedAt)));
          const tracker = log.trackChangeSets(changeSets);
          const missing = (index: number): number => {
            const set = changeSets[index] as (typeof changeSets)[number];
            return new Set(set.nodes.filter((nodeId) => !log.firstAtOrAfter(nodeId, set.revision))).size;
          };
          const check = (): void => {
            changeSets.forEach((_, index) => expect(tracker.missingOf(index)).toBe(missing(index)));
            expect(tracker.completeCount).toBe(changeSets.filter((_, index) => missing(index) === 0).length);
          };
          check();
          for (const event of events.slice(startAt)) {
            log.record(confirmed(event.nodeId, event.revision, event.confirmedAt));
            check();
          }
        },
      ),
    );
  });

  it('stops counting for a tracker once untracked', () => {
    const log = new ConfirmationLog('root');
    const tracker = log.trackImport(1, ['a']);
    log.untrack(tracker);
    log.record(confirmed('a', 1, 1));
    expect(tracker.missingCount).toBe(1);
  });
});
