import type { PipelineSnapshot } from './api/contract';

export interface TimedSnapshot {
  /** Seconds since the epoch (uPlot's time scale). */
  readonly t: number;
  readonly snapshot: PipelineSnapshot;
}

/** A snapshot this much older than the last one means the server's clock was set back. */
const CLOCK_STEP_SECONDS = 60;

/** The snapshots of the last few minutes, oldest first, for the charts. */
export class SnapshotHistory {
  private readonly entries: TimedSnapshot[] = [];

  constructor(private readonly keepSeconds: number) {}

  add(snapshot: PipelineSnapshot): void {
    const parsed = Date.parse(snapshot.at);
    const t = (Number.isNaN(parsed) ? Date.now() : parsed) / 1_000;
    const last = this.entries[this.entries.length - 1];
    if (last !== undefined && t <= last.t) {
      // Not newer than the last one: a repeat is not charted; the server's clock stepped back: start over.
      if (last.t - t < CLOCK_STEP_SECONDS) return;
      this.entries.length = 0;
    }
    this.entries.push({ t, snapshot });
    const oldest = t - this.keepSeconds;
    let drop = 0;
    while (drop < this.entries.length && (this.entries[drop] as TimedSnapshot).t < oldest) drop += 1;
    if (drop > 0) this.entries.splice(0, drop);
  }

  get size(): number {
    return this.entries.length;
  }

  /** uPlot's data: the times, then one array of values per series. */
  columns(
    series: readonly ((snapshot: PipelineSnapshot) => number | null)[],
  ): [number[], ...(number | null)[][]] {
    const times = this.entries.map((entry) => entry.t);
    const values = series.map((valueOf) => this.entries.map((entry) => valueOf(entry.snapshot)));
    return [times, ...values];
  }
}
