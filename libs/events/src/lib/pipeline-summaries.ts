import type {
  DistributionEvent,
  DistributionSummary,
  GenerationEvent,
  GenerationSummary,
  PipelineSummary,
} from '@policygen/sdk/contract';
import { TOPICS, parseEvent } from '@policygen/sdk/contract';

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

const HASH = /^sha256:[0-9a-f]{64}$/;
const OUTCOMES: ReadonlySet<unknown> = new Set(['generated', 'unchanged', 'failed']);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
const isName = (value: unknown): value is string => typeof value === 'string' && value.length > 0;
const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;
const isHash = (value: unknown): boolean => typeof value === 'string' && HASH.test(value);
/** An instant as `toISOString` writes it, the only form producers write: any other is the schema's to judge. */
function isInstant(value: unknown): boolean {
  if (typeof value !== 'string' || value.length !== 24) return false;
  const ms = Date.parse(value);
  return Number.isFinite(ms) && new Date(ms).toISOString() === value;
}

function isResult(value: unknown): boolean {
  return (
    Array.isArray(value) &&
    value.length === 3 &&
    isName(value[0]) &&
    OUTCOMES.has(value[1]) &&
    (value[2] === null || isHash(value[2]))
  );
}

function isConfirmed(value: unknown): boolean {
  return (
    Array.isArray(value) &&
    value.length === 9 &&
    isName(value[0]) &&
    isName(value[1]) &&
    isCount(value[2]) &&
    isHash(value[3]) &&
    isCount(value[4]) &&
    isCount(value[5]) &&
    isCount(value[6]) &&
    isCount(value[7]) &&
    typeof value[8] === 'boolean'
  );
}

function isFetched(value: unknown): boolean {
  return (
    Array.isArray(value) &&
    value.length === 7 &&
    isName(value[0]) &&
    isName(value[1]) &&
    isCount(value[2]) &&
    isHash(value[3]) &&
    isCount(value[4]) &&
    isCount(value[5]) &&
    typeof value[6] === 'boolean'
  );
}

/**
 * The value itself when it is a pipeline summary as the schema reads one, checked field by field
 * without a copy; undefined when it is not, or when only the schema can tell (a summary with
 * failures: they are rare; an instant not in `toISOString` form). The schema's parse of a summary
 * of thousands of tuples costs more than applying it. Stricter than the schema, never looser (a
 * property test); unlike the schema's parse it keeps fields it does not know.
 */
export function plainPipelineSummary(value: unknown): PipelineSummary | undefined {
  if (
    !isRecord(value) ||
    value['schemaVersion'] !== 1 ||
    !isName(value['batchId']) ||
    !isCount(value['revision'])
  )
    return undefined;
  if (value['type'] === 'generation.summary') {
    const { committedAt, generatedAt, catchUp, results, failures } = value;
    return isInstant(committedAt) &&
      isInstant(generatedAt) &&
      (catchUp === undefined || typeof catchUp === 'boolean') &&
      Array.isArray(results) &&
      results.every(isResult) &&
      Array.isArray(failures) &&
      failures.length === 0
      ? (value as GenerationSummary)
      : undefined;
  }
  if (value['type'] === 'distribution.summary') {
    const { publishedAt, confirmed, fetched } = value;
    return isInstant(publishedAt) &&
      Array.isArray(confirmed) &&
      confirmed.every(isConfirmed) &&
      Array.isArray(fetched) &&
      fetched.every(isFetched)
      ? (value as DistributionSummary)
      : undefined;
  }
  return undefined;
}

export type SummaryRead =
  | { readonly ok: true; readonly summary: PipelineSummary }
  | { readonly ok: false; readonly issues: readonly { readonly path: string; readonly message: string }[] };

/** A message of the pipeline-summaries topic: checked by hand, or by the schema when only it can tell. */
export function readPipelineSummary(text: string): SummaryRead {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, issues: [{ path: '$', message: `not JSON: ${(error as Error).message}` }] };
  }
  const plain = plainPipelineSummary(value);
  if (plain) return { ok: true, summary: plain };
  const parsed = parseEvent(TOPICS.pipelineSummaries, value);
  return parsed.ok ? { ok: true, summary: parsed.event } : parsed;
}
