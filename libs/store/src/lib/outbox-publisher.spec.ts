import fc from 'fast-check';
import { GenerationEngine, validateFleet } from '@policygen/engine';
import type { MessageProducer, TopicMessages } from '@policygen/messaging';
import { RevisionConflictError } from './config-store';
import { MemoryConfigStore } from './memory/memory-config-store';
import { OutboxPublisher } from './outbox-publisher';

type Step =
  | {
      readonly kind: 'commit';
      readonly fails: boolean;
      readonly stale: boolean;
      /** Another instance's commit: it carries none of this publisher's marks, and tells it nothing. */
      readonly foreign: boolean;
      /** This instance's commit whose answer was lost: its message is only in the outbox. */
      readonly answerLost: boolean;
    }
  | { readonly kind: 'run'; readonly sendFails: boolean }
  | { readonly kind: 'restart' };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constant('commit' as const),
    fails: fc.boolean(),
    stale: fc.boolean(),
    foreign: fc.boolean(),
    answerLost: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('run' as const), sendFails: fc.boolean() }),
  fc.record({ kind: fc.constant('restart' as const) }),
);

/** A bus that records what it acknowledged, and refuses a send when told to. */
class RecordingProducer implements Pick<MessageProducer, 'sendAll'> {
  readonly revisions: number[] = [];
  refuseNext = false;

  async sendAll(parts: readonly TopicMessages[]): Promise<void> {
    if (this.refuseNext) {
      this.refuseNext = false;
      throw new Error('the broker is away');
    }
    for (const part of parts)
      for (const message of part.messages)
        this.revisions.push((JSON.parse(String(message.value)) as { revision: number }).revision);
  }
}

describe('OutboxPublisher, marks carried by commits', () => {
  it('sends every revision in order, at least once, and leaves nothing unmarked once commits stop', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 40 }), async (steps) => {
        const empty = validateFleet({});
        if (!empty.ok) throw new Error('invalid empty fleet');
        const engine = GenerationEngine.fromFleet(empty.fleet);
        const store = new MemoryConfigStore();
        const producer = new RecordingProducer();
        const publisherOf = (): OutboxPublisher =>
          new OutboxPublisher(store, producer as unknown as MessageProducer, 3);
        let publisher = publisherOf();
        let revision = 0;
        for (const [index, next] of steps.entries()) {
          if (next.kind === 'restart') publisher = publisherOf();
          else if (next.kind === 'run') {
            producer.refuseNext = next.sendFails;
            await publisher.publishPending().catch(() => undefined);
          } else {
            const outcome = engine.apply({ upsert: { parameters: { [`p${index}`]: index } } });
            if (!outcome.ok) throw new Error('invalid change set');
            const marks = next.foreign ? [] : publisher.takeMarks();
            try {
              // A commit that never reached the store, one whose expected revision no longer holds, one that holds.
              if (next.fails) throw new Error('the connection dropped');
              const committed = await store.commit(outcome.change, {
                expectedRevision: next.stale ? revision - 1 : revision,
                markPublished: marks,
              });
              revision++;
              // What the commit wrote, as it gave it: sent without a read while nothing came between.
              if (!next.foreign && !next.answerLost && committed.outboxMessage)
                publisher.committed([committed.outboxMessage]);
            } catch (error) {
              if (!(error instanceof RevisionConflictError)) publisher.giveBack(marks);
            }
          }
        }
        producer.refuseNext = false;
        // Runs once commits stop: one sends what the commits gave, one reads what others wrote after
        // it, and the next two mark what those sent.
        for (let run = 0; run < 4; run++) await publisher.publishPending();

        const firstSeen: number[] = [];
        for (const sent of producer.revisions) if (!firstSeen.includes(sent)) firstSeen.push(sent);
        expect(firstSeen).toEqual(Array.from({ length: revision }, (_, at) => at + 1));
        // Without a restart, nothing is sent twice: what was sent is skipped until it is marked.
        const resent = producer.revisions.filter(
          (sent, at) => at > 0 && sent <= (producer.revisions[at - 1] ?? 0),
        );
        expect(resent.length === 0 || steps.some((taken) => taken.kind === 'restart')).toBe(true);
        expect(await store.unpublished()).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });

  it("sends its own commits' messages without reading the outbox, and reads it when another instance's come between", async () => {
    const empty = validateFleet({});
    if (!empty.ok) throw new Error('invalid empty fleet');
    const engine = GenerationEngine.fromFleet(empty.fleet);
    const store = new MemoryConfigStore();
    const producer = new RecordingProducer();
    const publisher = new OutboxPublisher(store, producer as unknown as MessageProducer, 3);
    let revision = 0;
    const commit = async (tell: boolean): Promise<void> => {
      const outcome = engine.apply({ upsert: { parameters: { [`p${revision}`]: revision } } });
      if (!outcome.ok) throw new Error('invalid change set');
      const committed = await store.commit(outcome.change, { expectedRevision: revision });
      revision++;
      if (tell && committed.outboxMessage) publisher.committed([committed.outboxMessage]);
    };
    // A message from before this process started comes before its first commit's: a gap, read.
    await commit(false);
    await commit(true);
    await publisher.publishPending();
    expect(publisher.reads).toBe(1);
    for (let count = 0; count < 5; count++) await commit(true);
    await publisher.publishPending();
    expect(publisher.reads).toBe(1);
    await commit(false);
    await commit(true);
    await publisher.publishPending();
    expect(publisher.reads).toBe(2);
    expect(producer.revisions).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });
});
