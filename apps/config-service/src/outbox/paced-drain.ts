/**
 * Runs a drain one at a time and starts one at most once per window. A request after a quiet
 * window runs at once; requests that come faster than that wait for the window's end and share
 * one run; a request during a run makes it run once more. Commits that come faster than the window
 * thus share one read of the outbox and one send to the bus, and, downstream, one generation
 * cycle, one feed append, one relay page and one confirmation: the pipeline's fixed costs are paid
 * per window instead of per commit, for at most one window of lag.
 */
export class PacedDrain {
  private running: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private requested = false;
  private lastStart = Number.NEGATIVE_INFINITY;
  private stopped = false;

  constructor(
    private readonly drain: () => Promise<void>,
    private readonly windowMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  request(): void {
    if (this.stopped) return;
    this.requested = true;
    if (this.running || this.timer) return;
    const wait = this.lastStart + this.windowMs - this.now();
    if (wait <= 0) this.start();
    else this.timer = setTimeout(() => this.start(), wait);
  }

  /** Cancels a waiting run and waits for the one under way; requests after this are ignored. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  private start(): void {
    this.timer = undefined;
    if (this.stopped) return;
    this.requested = false;
    this.lastStart = this.now();
    this.running = this.drain()
      // The drain reports its own failures; a rejection must not stop the pacing.
      .catch(() => undefined)
      .finally(() => {
        this.running = undefined;
        if (this.requested) this.request();
      });
  }
}
