import fc from 'fast-check';
import { CoalescedCommits } from './coalesced-commits';

/** A commit request: how many sends had started when it asked, and how it settled. */
interface Request {
  readonly askedAfterSends: number;
  settled?: 'resolved' | 'rejected';
  /** When it resolved, the start number of the latest send that had succeeded (1 for the first send). */
  coveredBy?: number;
}

describe('CoalescedCommits', () => {
  it('sends one commit for the batches that end while one is under way, and resolves each after a send that began after it', async () => {
    const commits = new CoalescedCommits();
    const sends: { startedAt: number; finish: () => void }[] = [];
    let clock = 0;
    const send = () =>
      new Promise<void>((resolve) => {
        sends.push({ startedAt: ++clock, finish: resolve });
      });
    const first = commits.commit(send);
    const asked = ++clock;
    const others = Array.from({ length: 11 }, () => commits.commit(send));
    expect(sends).toHaveLength(1);
    sends[0]?.finish();
    await first;
    await new Promise((resolve) => setImmediate(resolve));
    expect(sends).toHaveLength(2);
    expect(sends[1]?.startedAt).toBeGreaterThan(asked);
    sends[1]?.finish();
    await Promise.all(others);
    expect(sends).toHaveLength(2);
  });

  it('rejects only the batches of a failed commit; those waiting for the next one are committed by it', async () => {
    const commits = new CoalescedCommits();
    let calls = 0;
    let failFirst: (error: Error) => void = () => undefined;
    const send = () =>
      ++calls === 1
        ? new Promise<void>((_, reject) => {
            failFirst = reject;
          })
        : Promise.resolve();
    const first = commits.commit(send);
    const second = commits.commit(send);
    failFirst(new Error('rebalance in progress'));
    await expect(first).rejects.toThrow('rebalance in progress');
    await expect(second).resolves.toBeUndefined();
    expect(calls).toBe(2);
  });

  it('whatever the order of asks and answers, each ask settles after a send that started after it, and never more sends than asks', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.scheduler(),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 20 }),
        async (scheduler, failures) => {
          const commits = new CoalescedCommits();
          let started = 0;
          let lastSucceededStart = 0;
          const send = () => {
            const index = started++;
            const startedAs = started;
            return scheduler
              .schedule(Promise.resolve(failures[index % failures.length]), `send ${index}`)
              .then((fails) => {
                if (fails) throw new Error(`send ${index} failed`);
                lastSucceededStart = Math.max(lastSucceededStart, startedAs);
              });
          };
          const requests: Request[] = [];
          const asks = failures.map((_, index) =>
            scheduler.schedule(Promise.resolve(index), `ask ${index}`).then(() => {
              const request: Request = { askedAfterSends: started };
              requests.push(request);
              return commits.commit(send).then(
                () => {
                  request.settled = 'resolved';
                  request.coveredBy = lastSucceededStart;
                },
                () => {
                  request.settled = 'rejected';
                },
              );
            }),
          );
          await scheduler.waitFor(Promise.all(asks));
          expect(requests.every((request) => request.settled !== undefined)).toBe(true);
          for (const request of requests.filter((each) => each.settled === 'resolved'))
            expect(request.coveredBy).toBeGreaterThan(request.askedAfterSends);
          expect(started).toBeLessThanOrEqual(requests.length);
        },
      ),
      { numRuns: 200 },
    );
  });
});
