import fc from 'fast-check';
import { PacedDrain } from './paced-drain';

const WINDOW = 100;

/** A drain that takes `durationMs` of fake time and records when each run started and ended. */
function recordingDrain(durationMs: () => number): {
  readonly runs: { start: number; end?: number }[];
  readonly drain: () => Promise<void>;
} {
  const runs: { start: number; end?: number }[] = [];
  return {
    runs,
    drain: async () => {
      const run: { start: number; end?: number } = { start: Date.now() };
      runs.push(run);
      await new Promise((resolve) => setTimeout(resolve, durationMs()));
      run.end = Date.now();
    },
  };
}

describe('PacedDrain', () => {
  beforeEach(() => jest.useFakeTimers({ now: 0 }));
  afterEach(() => jest.useRealTimers());

  it('runs a request after a quiet window at once, and the requests of the next window together at its end', async () => {
    const { runs, drain } = recordingDrain(() => 5);
    const paced = new PacedDrain(drain, WINDOW, () => Date.now());
    paced.request();
    expect(runs.map((run) => run.start)).toEqual([0]);
    await jest.advanceTimersByTimeAsync(10);
    for (let step = 0; step < 4; step++) {
      paced.request();
      await jest.advanceTimersByTimeAsync(20);
    }
    expect(runs).toHaveLength(1);
    await jest.advanceTimersByTimeAsync(WINDOW);
    expect(runs.map((run) => run.start)).toEqual([0, WINDOW]);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(runs).toHaveLength(2);
    const quietAgain = Date.now();
    paced.request();
    expect(runs.map((run) => run.start)).toEqual([0, WINDOW, quietAgain]);
  });

  it('runs once more after a run that a request came during, and goes on after a failed run', async () => {
    let calls = 0;
    const paced = new PacedDrain(
      async () => {
        calls++;
        await new Promise((resolve) => setTimeout(resolve, 300));
        if (calls === 1) throw new Error('broker away');
      },
      WINDOW,
      () => Date.now(),
    );
    paced.request();
    await jest.advanceTimersByTimeAsync(150);
    paced.request();
    expect(calls).toBe(1);
    await jest.advanceTimersByTimeAsync(150);
    expect(calls).toBe(2);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(calls).toBe(2);
  });

  it('after stop, runs nothing more and waits for the run under way', async () => {
    const { runs, drain } = recordingDrain(() => 50);
    const paced = new PacedDrain(drain, WINDOW, () => Date.now());
    paced.request();
    paced.request();
    const stopped = paced.stop();
    paced.request();
    await jest.advanceTimersByTimeAsync(1_000);
    await stopped;
    expect(runs).toEqual([{ start: 0, end: 50 }]);
  });

  it('whatever the requests and run times: each request is followed by a run that starts at or after it, runs never overlap, and starts are a window apart', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 250 }), { minLength: 1, maxLength: 30 }),
        fc.array(fc.integer({ min: 0, max: 300 }), { minLength: 1, maxLength: 30 }),
        async (gaps, durations) => {
          jest.setSystemTime(0);
          let next = 0;
          const { runs, drain } = recordingDrain(() => durations[next++ % durations.length] ?? 0);
          const paced = new PacedDrain(drain, WINDOW, () => Date.now());
          const requests: number[] = [];
          for (const gap of gaps) {
            await jest.advanceTimersByTimeAsync(gap);
            requests.push(Date.now());
            paced.request();
          }
          await jest.advanceTimersByTimeAsync(WINDOW + 300 * (gaps.length + 1));
          for (const asked of requests) expect(runs.some((run) => run.start >= asked)).toBe(true);
          for (let index = 1; index < runs.length; index++) {
            const [before, run] = [runs[index - 1], runs[index]] as [
              { start: number; end?: number },
              { start: number },
            ];
            expect(run.start).toBeGreaterThanOrEqual(before.end ?? Number.POSITIVE_INFINITY);
            expect(run.start - before.start).toBeGreaterThanOrEqual(WINDOW);
          }
          expect(runs.length).toBeLessThanOrEqual(requests.length);
          await paced.stop();
        },
      ),
      { numRuns: 100 },
    );
  });
});
