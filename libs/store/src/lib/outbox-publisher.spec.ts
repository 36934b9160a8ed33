import fc from 'fast-check';
import { emptyChangeSet } from '@policygen/engine';
import type { ParsedChangeSet } from '@policygen/engine';
import type { MessageProducer } from '@policygen/messaging';
import { MemoryConfigStore } from './memory/memory-config-store';
import { OutboxPublisher } from './outbox-publisher';

function parameters(values: Record<string, number>): ParsedChangeSet {
  const empty = emptyChangeSet();
  return { ...empty, upsert: { ...empty.upsert, parameters: values } };
}

/** A bus that keeps the revisions sent to it, in order. */
function recordingBus(): { producer: MessageProducer; revisions: number[] } {
  const revisions: number[] = [];
  const producer = {
    send: async () => undefined,
    sendAll: async (parts: readonly { messages: readonly { value: string | Buffer | null }[] }[]) => {
      for (const part of parts)
        for (const message of part.messages)
          revisions.push((JSON.parse(String(message.value)) as { revision: number }).revision);
    },
    close: async () => undefined,
  } as unknown as MessageProducer;
  return { producer, revisions };
}

describe('OutboxPublisher', () => {
  it('marks a send with its next read of the outbox, not in a round trip of its own', async () => {
    const store = new MemoryConfigStore();
    const markings: number[][] = [];
    const reads: (readonly number[])[] = [];
    const watched = {
      unpublished: (limit?: number, markingFirst: readonly number[] = []) => {
        reads.push([...markingFirst]);
        return store.unpublished(limit, markingFirst);
      },
      markPublished: (ids: readonly number[]) => {
        markings.push([...ids]);
        return store.markPublished(ids);
      },
    };
    const { producer, revisions } = recordingBus();
    const publisher = new OutboxPublisher(watched, producer);
    await store.commit(parameters({ a: 1 }));
    await store.commit(parameters({ a: 2 }));
    const firstSent = (await store.unpublished()).map((message) => message.id);
    expect(await publisher.publishPending()).toBe(2);
    await store.commit(parameters({ a: 3 }));
    expect(await publisher.publishPending()).toBe(1);

    expect(revisions).toEqual([1, 2, 3]);
    expect(markings).toEqual([]);
    // The second run's read marked what the first one sent.
    expect(reads.slice(0, 2)).toEqual([[], firstSent]);
    // The last send is marked by the next read, or before a stop.
    expect(await store.unpublishedCount()).toBe(1);
    expect(publisher.awaitingMark).toBe(1);
    await publisher.markSent();
    expect(markings).toHaveLength(1);
    expect(await store.unpublishedCount()).toBe(0);
  });

  it('sends every revision, in order within a run, whatever the commits, sends, failures and crashes', async () => {
    type Step = 'commit' | 'publish' | 'failingSend' | 'failingRead' | 'crash';
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.constantFrom<Step>('commit', 'commit', 'publish', 'failingSend', 'failingRead', 'crash'),
          {
            maxLength: 30,
          },
        ),
        fc.integer({ min: 1, max: 3 }),
        async (steps, batchSize) => {
          const store = new MemoryConfigStore();
          const { producer, revisions } = recordingBus();
          let failSend = false;
          let failRead = false;
          const flaky = {
            unpublished: (limit?: number, markingFirst?: readonly number[]) =>
              failRead ? Promise.reject(new Error('read failed')) : store.unpublished(limit, markingFirst),
            markPublished: (ids: readonly number[]) => store.markPublished(ids),
          };
          const flakyBus = {
            ...producer,
            sendAll: (parts: Parameters<MessageProducer['sendAll']>[0]) =>
              failSend ? Promise.reject(new Error('send failed')) : producer.sendAll(parts),
          } as MessageProducer;
          let publisher = new OutboxPublisher(flaky, flakyBus, batchSize);
          let committed = 0;
          for (const step of steps) {
            if (step === 'commit') await store.commit(parameters({ a: ++committed }));
            else if (step === 'crash') publisher = new OutboxPublisher(flaky, flakyBus, batchSize);
            else {
              failSend = step === 'failingSend';
              failRead = step === 'failingRead';
              await publisher.publishPending().catch(() => undefined);
              failSend = failRead = false;
            }
          }
          await publisher.publishPending();
          await publisher.markSent();

          // Every committed revision went out, none is left waiting, and a revision sent again
          // (after a crash or a failure) comes with every one after it, in order.
          expect(new Set(revisions)).toEqual(
            new Set(Array.from({ length: committed }, (_, index) => index + 1)),
          );
          expect(await store.unpublishedCount()).toBe(0);
          const outOfOrder = revisions.filter(
            (revision, index) =>
              index > 0 &&
              revision !== (revisions[index - 1] as number) + 1 &&
              revision > (revisions[index - 1] as number),
          );
          expect(outOfOrder).toEqual([]);
        },
      ),
      { numRuns: 300 },
    );
  });
});
