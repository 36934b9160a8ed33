import type {
  DistributionEvent,
  DistributionSummary,
  GenerationEvent,
  GenerationSummary,
} from '@policygen/sdk/contract';

/**
 * A summary's budget: far under a message's limit (1 MiB by default), so that a batch of any size
 * goes out as several summaries rather than being refused.
 */
export const SUMMARY_MAX_BYTES = 256 * 1024;

/** The revision a batch of generation results is about, and when it was committed. */
export interface SummaryStamp {
  readonly revision: number;
  readonly committedAt: string;
  readonly catchUp?: boolean;
}

export interface SummaryOptions {
  /** The batch's id; a batch split into several summaries gives each `<batchId>:<n>`. */
  readonly batchId: string;
  /** When the batch was published (default: now). */
  readonly at?: string;
  readonly maxBytes?: number;
}

/** JSON's bytes of a tuple beside its strings, over-estimated (brackets, quotes, numbers, a hash). */
const TUPLE_BYTES = 192;

/** Splits items into consecutive chunks whose estimated size stays under the budget (one item at least each). */
function chunks<T>(items: readonly T[], bytesOf: (item: T) => number, maxBytes: number): T[][] {
  const out: T[][] = [];
  let current: T[] = [];
  let size = 0;
  for (const item of items) {
    const bytes = bytesOf(item);
    if (current.length > 0 && size + bytes > maxBytes) {
      out.push(current);
      current = [];
      size = 0;
    }
    current.push(item);
    size += bytes;
  }
  if (current.length > 0 || out.length === 0) out.push(current);
  return out;
}

function idOf(batchId: string, index: number, count: number): string {
  return count === 1 ? batchId : `${batchId}:${index}`;
}

/**
 * The summaries of a batch of `generation.result` events of one revision (the generator's slice):
 * one, or several when the batch exceeds the budget, each node in one of them, in order.
 */
export function generationSummaries(
  stamp: SummaryStamp,
  events: readonly GenerationEvent[],
  options: SummaryOptions,
): GenerationSummary[] {
  const at = options.at ?? new Date().toISOString();
  const parts = chunks(
    events,
    (event) =>
      TUPLE_BYTES +
      event.nodeId.length * 2 +
      (event.outcome === 'failed' ? JSON.stringify(event.errors).length : 0),
    options.maxBytes ?? SUMMARY_MAX_BYTES,
  );
  return parts.map((part, index) => ({
    schemaVersion: 1,
    type: 'generation.summary',
    batchId: idOf(options.batchId, index, parts.length),
    revision: stamp.revision,
    committedAt: stamp.committedAt,
    generatedAt: at,
    ...(stamp.catchUp ? { catchUp: true } : {}),
    results: part.map((event) => [event.nodeId, event.outcome, event.hash]),
    failures: part
      .filter((event) => event.outcome === 'failed')
      .map((event) => ({ nodeId: event.nodeId, errors: event.errors })),
  }));
}

/**
 * The summaries of a batch of distribution events (a relay's confirmations and fetch reports):
 * one, or several when the batch exceeds the budget, each event in one of them, in order.
 */
export function distributionSummaries(
  events: readonly DistributionEvent[],
  options: SummaryOptions,
): DistributionSummary[] {
  const at = options.at ?? new Date().toISOString();
  const parts = chunks(
    events,
    (event) => TUPLE_BYTES + (event.nodeId.length + event.relayId.length) * 2,
    options.maxBytes ?? SUMMARY_MAX_BYTES,
  );
  return parts.map((part, index) => {
    const confirmed: DistributionSummary['confirmed'] = [];
    const fetched: DistributionSummary['fetched'] = [];
    let revision = 0;
    for (const event of part) {
      revision = Math.max(revision, event.revision);
      const committed = Date.parse(event.committedAt);
      if (event.type === 'node.fetched')
        fetched.push([
          event.relayId,
          event.nodeId,
          event.revision,
          event.hash,
          committed,
          Date.parse(event.fetchedAt),
          event.catchUp === true,
        ]);
      else
        confirmed.push([
          event.relayId,
          event.nodeId,
          event.revision,
          event.hash,
          committed,
          Date.parse(event.generatedAt),
          Date.parse(event.distributedAt),
          Date.parse(event.confirmedAt),
          event.catchUp === true,
        ]);
    }
    return {
      schemaVersion: 1,
      type: 'distribution.summary',
      batchId: idOf(options.batchId, index, parts.length),
      revision,
      publishedAt: at,
      confirmed,
      fetched,
    };
  });
}
