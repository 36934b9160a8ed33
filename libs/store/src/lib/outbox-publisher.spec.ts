import fc from 'fast-check';
import { GenerationEngine, validateFleet } from '@policygen/engine';
import type { MessageProducer, TopicMessages } from '@policygen/messaging';
import { RevisionConflictError } from './config-store';
import { MemoryConfigStore } from './memory/memory-config-store';
import { OutboxPublisher } from './outbox-publisher';

type Step =
  | { readonly kind: 'commit'; readonly fails: boolean; readonly stale: boolean }
  | { readonly kind: 'run'; readonly sendFails: boolean }
  | { readonly kind: 'restart' };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('commit' as const), fails: fc.boolean(), stale: fc.boolean() }),
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
            const marks = publisher.takeMarks();
            try {
              // A commit that never reached the store, one whose expected revision no longer holds, one that holds.
              if (next.fails) throw new Error('the connection dropped');
              await store.commit(outcome.change, {
                expectedRevision: next.stale ? revision - 1 : revision,
                markPublished: marks,
              });
              revision++;
            } catch (error) {
              if (!(error instanceof RevisionConflictError)) publisher.giveBack(marks);
            }
          }
        }
        producer.refuseNext = false;
        for (let run = 0; run < 3; run++) await publisher.publishPending();

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
      { numRuns: 150 },
    );
  });
});
