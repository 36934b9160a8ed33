import type { RetryPolicy } from '@policygen/sdk';
import { backoffDelay } from '@policygen/sdk';
import type { IncomingMessage } from '../messaging';
import { isTransientFailure } from './transient-failure';

/** Why a message was given up. */
export interface DeliveryFailure {
  /** The handler's last error. */
  readonly error: unknown;
  /** Handler calls that included the message and failed. */
  readonly attempts: number;
  readonly failedAt: Date;
}

/** What the delivery of one batch reports as it goes, for logs, metrics and readiness. */
export interface DeliveryObserver {
  /** The handler failed on these messages; they are tried again after `delayMs` (the budget spent by one). */
  retrying?(messages: readonly IncomingMessage[], error: unknown, attempt: number, delayMs: number): void;
  /** The infrastructure failed (the budget untouched); tried again after `delayMs`. */
  transient?(messages: readonly IncomingMessage[], error: unknown, streak: number, delayMs: number): void;
  /** A handler call succeeded after transient failures. */
  recovered?(messages: readonly IncomingMessage[]): void;
}

export interface RetryBudget {
  readonly policy: RetryPolicy;
  /** Gives messages (consecutive ones of the batch) to the handler. */
  readonly handle: (messages: readonly IncomingMessage[]) => Promise<void>;
  /** Sends a message given up to its dead-letter topic; if it rejects, the delivery rejects. */
  readonly deadLetter: (message: IncomingMessage, failure: DeliveryFailure) => Promise<void>;
  /** The messages up to this one are dealt with (handled or dead-lettered): their offsets may be committed. */
  readonly handledUpTo?: (message: IncomingMessage) => void;
  /** Waits between tries; rejects (the delivery with it) when the consumer stops. */
  readonly wait: (ms: number) => Promise<void>;
  readonly random?: () => number;
  readonly isTransient?: (error: unknown) => boolean;
  readonly observer?: DeliveryObserver;
  readonly now?: () => Date;
}

/**
 * Delivers a batch under a retry budget. A batch whose handler fails is tried again with
 * exponential backoff (with jitter) until it succeeds or `policy.attempts` tries failed; then the
 * failing messages are isolated by halving: each half is tried once, one that succeeds is done, one
 * that fails is halved again, and a message that fails alone is dead-lettered. So exactly the
 * messages the handler cannot take go to the DLQ, and every other is handled once more in order:
 * a poison message never stalls its partition. A transient failure (`isTransientFailure`) spends
 * no budget: the same messages are tried again, with backoff capped at `maxDelayMs`, until the
 * infrastructure is back or the consumer stops.
 */
export async function deliverWithRetryBudget(
  messages: readonly IncomingMessage[],
  budget: RetryBudget,
): Promise<void> {
  if (messages.length === 0) return;
  const failures = new Map<IncomingMessage, number>();
  const attempt = async (part: readonly IncomingMessage[]): Promise<unknown> => {
    const error = await tryUntilNotTransient(part, budget);
    if (error === undefined) budget.handledUpTo?.(part[part.length - 1] as IncomingMessage);
    else for (const message of part) failures.set(message, (failures.get(message) ?? 0) + 1);
    return error;
  };

  let error = await attempt(messages);
  for (let failed = 1; error !== undefined && failed < budget.policy.attempts; failed++) {
    const delayMs = backoffDelay(budget.policy, failed, (budget.random ?? Math.random)());
    budget.observer?.retrying?.(messages, error, failed, delayMs);
    await budget.wait(delayMs);
    error = await attempt(messages);
  }
  if (error === undefined) return;

  const isolate = async (part: readonly IncomingMessage[], lastError: unknown): Promise<void> => {
    if (part.length === 1) {
      const message = part[0] as IncomingMessage;
      await budget.deadLetter(message, {
        error: lastError,
        attempts: failures.get(message) ?? 1,
        failedAt: (budget.now ?? (() => new Date()))(),
      });
      budget.handledUpTo?.(message);
      return;
    }
    const middle = Math.ceil(part.length / 2);
    for (const half of [part.slice(0, middle), part.slice(middle)]) {
      const halfError = await attempt(half);
      if (halfError !== undefined) await isolate(half, halfError);
    }
  };
  await isolate(messages, error);
}

/** One try of the handler, tried again for as long as it fails transiently: the error it ends on, or undefined. */
async function tryUntilNotTransient(part: readonly IncomingMessage[], budget: RetryBudget): Promise<unknown> {
  const isTransient = budget.isTransient ?? isTransientFailure;
  for (let streak = 0; ;) {
    try {
      await budget.handle(part);
      if (streak > 0) budget.observer?.recovered?.(part);
      return undefined;
    } catch (error) {
      if (!isTransient(error)) return error ?? new Error('the handler threw nothing');
      streak++;
      const delayMs = backoffDelay(budget.policy, streak, (budget.random ?? Math.random)());
      budget.observer?.transient?.(part, error, streak, delayMs);
      await budget.wait(delayMs);
    }
  }
}
