/** What one dependency or duty of a service says about whether it can take traffic. */
export interface ReadinessAnswer {
  /** False: `/health/ready` answers 503 with this check's `reason`. */
  readonly ready: boolean;
  /** Why it is not ready, or what is degraded, for a person to read. */
  readonly reason?: string;
  /** Ready, but impaired (e.g. some nodes fail): reported, still 200, so nobody restarts it for that. */
  readonly degraded?: boolean;
  readonly details?: Readonly<Record<string, unknown>>;
}

export interface ReadinessCheck {
  /** A short key: `postgres`, `kafka`, `generation`, ... (prefixed by the service in the embedded mode). */
  readonly name: string;
  check(): ReadinessAnswer | Promise<ReadinessAnswer>;
}

export interface ReadinessReport {
  readonly ready: boolean;
  readonly degraded: boolean;
  readonly checks: Readonly<Record<string, ReadinessAnswer>>;
}

/** How long one check may take before it counts as not ready: a hung dependency must not hang the probe. */
const CHECK_TIMEOUT_MS = 3_000;

async function answerOf(check: ReadinessCheck): Promise<ReadinessAnswer> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      Promise.resolve().then(() => check.check()),
      new Promise<ReadinessAnswer>((resolve) => {
        timer = setTimeout(
          () => resolve({ ready: false, reason: `no answer within ${CHECK_TIMEOUT_MS} ms` }),
          CHECK_TIMEOUT_MS,
        );
      }),
    ]);
  } catch (error) {
    return { ready: false, reason: (error as Error).message };
  } finally {
    clearTimeout(timer);
  }
}

/** Runs every check at once; ready when all are. */
export async function evaluateReadiness(checks: readonly ReadinessCheck[]): Promise<ReadinessReport> {
  const answers = await Promise.all(checks.map(answerOf));
  const byName: Record<string, ReadinessAnswer> = {};
  checks.forEach((check, index) => {
    byName[check.name] = answers[index] as ReadinessAnswer;
  });
  return {
    ready: answers.every((answer) => answer.ready),
    degraded: answers.some((answer) => answer.degraded === true),
    checks: byName,
  };
}

/** The checks of another service, under its name: the embedded mode's root readiness covers them all. */
export function prefixedChecks(prefix: string, checks: readonly ReadinessCheck[]): ReadinessCheck[] {
  return checks.map((check) => ({ name: `${prefix}.${check.name}`, check: () => check.check() }));
}

/**
 * Not ready until the work that was waiting at start is done (`remaining` reaches 0 once), then
 * ready for good: later backlogs are load, reported by the metrics, not a reason to take the
 * service out of rotation.
 */
export function catchUpCheck(name: string, remaining: () => Promise<number>, what: string): ReadinessCheck {
  let caughtUp = false;
  return {
    name,
    async check() {
      if (caughtUp) return { ready: true };
      const left = await remaining();
      if (left === 0) caughtUp = true;
      return caughtUp ? { ready: true } : { ready: false, reason: `catching up: ${left} ${what} to go` };
    },
  };
}

/** A dependency that answers a ping (a cache, a database): not ready while it does not. */
export function pingCheck(name: string, ping: () => Promise<void>, what: string): ReadinessCheck {
  return {
    name,
    check: () =>
      ping().then(
        () => ({ ready: true }),
        (error: unknown) => ({
          ready: false,
          reason: `${what} does not answer: ${(error as Error).message}`,
        }),
      ),
  };
}
