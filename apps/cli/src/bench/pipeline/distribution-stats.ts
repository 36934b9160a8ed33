/** p50/p95/p99/max of a sample (nearest rank), null throughout for an empty one. */
export interface Distribution {
  readonly count: number;
  readonly p50: number | null;
  readonly p95: number | null;
  readonly p99: number | null;
  readonly max: number | null;
}

export function distributionOf(values: readonly number[]): Distribution {
  if (values.length === 0) return { count: 0, p50: null, p95: null, p99: null, max: null };
  const sorted = [...values].sort((a, b) => a - b);
  const at = (quantile: number): number =>
    round(
      sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(quantile * sorted.length) - 1))] as number,
    );
  return {
    count: sorted.length,
    p50: at(0.5),
    p95: at(0.95),
    p99: at(0.99),
    max: round(sorted[sorted.length - 1] as number),
  };
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}
