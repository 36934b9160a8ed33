const integerFormat = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const rateFormat = new Intl.NumberFormat('en-US', { maximumFractionDigits: 1 });

export const DASH = '—';

export function formatInteger(value: number | null | undefined): string {
  return value === null || value === undefined || !Number.isFinite(value)
    ? DASH
    : integerFormat.format(value);
}

/** Milliseconds, in the unit that reads best: `850 ms`, `1.25 s`, `2 min 05 s`. */
export function formatMs(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return DASH;
  if (value < 1_000) return `${Math.round(value)} ms`;
  if (value < 60_000) return `${(value / 1_000).toFixed(value < 10_000 ? 2 : 1)} s`;
  const seconds = Math.round(value / 1_000);
  return `${Math.floor(seconds / 60)} min ${String(seconds % 60).padStart(2, '0')} s`;
}

export function formatRate(value: number | null | undefined): string {
  return value === null || value === undefined || !Number.isFinite(value)
    ? DASH
    : `${rateFormat.format(value)}/s`;
}

/** A wall-clock time, local, to the second. */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return DASH;
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleTimeString([], { hour12: false });
}

/** A date and time, local, to the second. */
export function formatDateTime(iso: string | null | undefined): string {
  if (!iso) return DASH;
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString([], { hour12: false });
}

/** How long ago a time was: `just now`, `12 s ago`, `3 min ago`, `2 h ago`. */
export function formatAgo(iso: string | null | undefined, now: number = Date.now()): string {
  if (!iso) return DASH;
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return iso;
  const seconds = Math.max(0, Math.round((now - then) / 1_000));
  if (seconds < 2) return 'just now';
  if (seconds < 120) return `${seconds} s ago`;
  if (seconds < 7_200) return `${Math.round(seconds / 60)} min ago`;
  return `${Math.round(seconds / 3_600)} h ago`;
}

/** Partition numbers as ranges: `0-3, 7, 9-10`. */
export function formatRanges(numbers: readonly number[]): string {
  const sorted = [...new Set(numbers)].sort((a, b) => a - b);
  const parts: string[] = [];
  let index = 0;
  while (index < sorted.length) {
    const start = sorted[index] as number;
    let end = start;
    while (index + 1 < sorted.length && sorted[index + 1] === end + 1) {
      end += 1;
      index += 1;
    }
    parts.push(start === end ? String(start) : `${start}-${end}`);
    index += 1;
  }
  return parts.length === 0 ? DASH : parts.join(', ');
}

export function truncate(text: string, length: number): string {
  return text.length <= length ? text : `${text.slice(0, length - 1)}…`;
}
