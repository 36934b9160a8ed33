/** How often a failing handler is tried, and how long the consumer waits between tries. */
export interface RetryPolicy {
  /**
   * Tries in all, the first included (default 5); then the message goes to the dead-letter topic.
   * `Infinity` never gives a handler's failure up: for failures that are the downstream's (a
   * database away), the key waits, retried at `maxDelayMs`, until it succeeds or the consumer stops.
   */
  readonly attempts: number;
  /** The wait after the first failure (default 200 ms); it doubles after each further one. */
  readonly initialDelayMs: number;
  /** The longest wait (default 10 s). */
  readonly maxDelayMs: number;
  /** Each wait is shortened by up to this fraction at random (default 0.2), so retries spread out. */
  readonly jitter: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  attempts: 5,
  initialDelayMs: 200,
  maxDelayMs: 10_000,
  jitter: 0.2,
};

export function retryPolicy(overrides: Partial<RetryPolicy> = {}): RetryPolicy {
  const policy = { ...DEFAULT_RETRY_POLICY, ...overrides };
  if (!(Number.isInteger(policy.attempts) || policy.attempts === Infinity) || policy.attempts < 1)
    throw new RangeError(
      `retry.attempts must be an integer of at least 1 (or Infinity), not ${policy.attempts}`,
    );
  if (!(policy.initialDelayMs >= 0))
    throw new RangeError(`retry.initialDelayMs must be >= 0, not ${policy.initialDelayMs}`);
  if (!(policy.maxDelayMs >= policy.initialDelayMs))
    throw new RangeError(`retry.maxDelayMs must be >= retry.initialDelayMs, not ${policy.maxDelayMs}`);
  if (!(policy.jitter >= 0 && policy.jitter <= 1))
    throw new RangeError(`retry.jitter must be within [0, 1], not ${policy.jitter}`);
  return policy;
}

/** The wait before try `failures + 1`, after `failures` failed ones; `random` is in [0, 1). */
export function backoffDelay(policy: RetryPolicy, failures: number, random: number = Math.random()): number {
  const exponential = policy.initialDelayMs * 2 ** Math.max(0, failures - 1);
  const capped = Math.min(policy.maxDelayMs, exponential);
  return capped * (1 - policy.jitter * random);
}
