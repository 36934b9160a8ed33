import fc from 'fast-check';
import type { IncomingMessage } from '../messaging';
import type { DeliveryFailure, RetryBudget } from './retry-budget';
import { deliverWithRetryBudget } from './retry-budget';
import { TransientFailure } from './transient-failure';

const POLICY = { attempts: 5, initialDelayMs: 200, maxDelayMs: 10_000, jitter: 0.2 };

function messages(count: number): IncomingMessage[] {
  return Array.from({ length: count }, (_, index) => ({
    topic: 't',
    partition: 0,
    offset: String(index),
    key: `k${index}`,
    value: Buffer.from(`m${index}`),
    headers: {},
    timestamp: 0,
  }));
}

/** A run of the delivery with no real waiting: what was handled, dead-lettered, committed, waited. */
function harness(handle: (part: readonly IncomingMessage[]) => void, overrides: Partial<RetryBudget> = {}) {
  const delivered: string[][] = [];
  const deadLettered: { offset: string; failure: DeliveryFailure }[] = [];
  const committed: string[] = [];
  const waits: number[] = [];
  const budget: RetryBudget = {
    policy: POLICY,
    handle: async (part) => {
      handle(part);
      delivered.push(part.map((message) => message.offset));
    },
    deadLetter: async (message, failure) => {
      deadLettered.push({ offset: message.offset, failure });
    },
    handledUpTo: (message) => committed.push(message.offset),
    wait: async (ms) => {
      waits.push(ms);
    },
    random: () => 0.5,
    ...overrides,
  };
  return { budget, delivered, deadLettered, committed, waits };
}

describe('deliverWithRetryBudget', () => {
  it('isolates exactly the poison messages: every other is delivered once, in order, and commits advance in order', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc
          .integer({ min: 1, max: 40 })
          .chain((size) =>
            fc.tuple(
              fc.constant(size),
              fc.uniqueArray(fc.integer({ min: 0, max: size - 1 }), { maxLength: size }),
            ),
          ),
        fc.integer({ min: 1, max: 6 }),
        async ([size, poisonIndexes], attempts) => {
          const batch = messages(size);
          const poison = new Set(poisonIndexes.map(String));
          const run = harness(
            (part) => {
              const bad = part.find((message) => poison.has(message.offset));
              if (bad) throw new Error(`cannot take ${bad.offset}`);
            },
            { policy: { ...POLICY, attempts } },
          );
          await deliverWithRetryBudget(batch, run.budget);

          const expectedGood = batch.map((message) => message.offset).filter((offset) => !poison.has(offset));
          expect(run.delivered.flat()).toEqual(expectedGood);
          expect(run.deadLettered.map((letter) => letter.offset).sort()).toEqual([...poison].sort());
          for (const letter of run.deadLettered) {
            expect(letter.failure.attempts).toBeGreaterThanOrEqual(attempts);
            expect((letter.failure.error as Error).message).toBe(`cannot take ${letter.offset}`);
          }
          // Every message ends committed once, and the commits never go back.
          expect(run.committed.map(Number)).toEqual([...run.committed.map(Number)].sort((a, b) => a - b));
          expect(run.committed[run.committed.length - 1]).toBe(String(size - 1));
          // The budget's backoff is spent on the whole batch only: halves are tried at once.
          expect(run.waits).toHaveLength(poison.size > 0 ? attempts - 1 : 0);
        },
      ),
    );
  });

  it('gives a lone poison message `attempts` tries with doubling waits, then dead-letters it with its last error', async () => {
    const run = harness(() => {
      throw new Error('bad value');
    });
    await deliverWithRetryBudget(messages(1), run.budget);
    expect(run.deadLettered).toHaveLength(1);
    expect(run.deadLettered[0]?.failure.attempts).toBe(5);
    expect(run.waits).toEqual([180, 360, 720, 1440]);
    expect(run.committed).toEqual(['0']);
  });

  it('waits out a transient failure without spending the budget, capped at maxDelayMs, then delivers', async () => {
    let failures = 12;
    const run = harness(() => {
      if (failures-- > 0)
        throw new Error('write failed', { cause: Object.assign(new Error('no space'), { code: 'ENOSPC' }) });
    });
    await deliverWithRetryBudget(messages(3), run.budget);
    expect(run.deadLettered).toEqual([]);
    expect(run.delivered).toEqual([['0', '1', '2']]);
    expect(run.waits).toHaveLength(12);
    expect(Math.max(...run.waits)).toBe(9_000);
  });

  it('a transient failure amid message failures spends nothing: the poison still gets exactly its budget', async () => {
    let calls = 0;
    const run = harness(() => {
      calls++;
      if (calls % 2 === 0) throw new TransientFailure('the cache is restarting');
      throw new Error('poison');
    });
    await deliverWithRetryBudget(messages(1), run.budget);
    expect(run.deadLettered[0]?.failure.attempts).toBe(5);
  });

  it('rejects, dead-lettering nothing more, when a wait is cut short (the consumer stops)', async () => {
    const run = harness(
      () => {
        throw new Error('poison');
      },
      {
        wait: async () => {
          throw new Error('stopping');
        },
      },
    );
    await expect(deliverWithRetryBudget(messages(2), run.budget)).rejects.toThrow('stopping');
    expect(run.deadLettered).toEqual([]);
    expect(run.committed).toEqual([]);
  });

  it('rejects when a dead letter cannot be sent, having committed only what came before it', async () => {
    const run = harness(
      (part) => {
        if (part.some((message) => message.offset === '2')) throw new Error('poison');
      },
      {
        deadLetter: async () => {
          throw new Error('the DLQ is away');
        },
      },
    );
    await expect(deliverWithRetryBudget(messages(4), run.budget)).rejects.toThrow('the DLQ is away');
    expect(run.committed).toEqual(['1']);
  });
});
