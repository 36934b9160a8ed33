import { z } from 'zod';
import type { Topic } from './topics';
import { TOPICS } from './topics';

/**
 * The events of every topic, one zod schema each: the TypeScript types, the runtime checks and the
 * published JSON Schemas (`schemas/*.schema.json`, written from these by `jsonSchemaOf`) all come
 * from here. Every event carries `schemaVersion` and a `type`; a consumer ignores fields it does not
 * know, so fields may be added without a new version.
 */

const schemaVersion = z.literal(1);
const nodeId = z.string().min(1);
const revision = z.number().int().nonnegative();
const sha256 = z.string().regex(/^[0-9a-f]{64}$/, { message: 'a lowercase hex SHA-256' });
const bundleHash = z.string().regex(/^sha256:[0-9a-f]{64}$/, { message: 'sha256:<64 hex>' });
const timestamp = z.iso.datetime({ offset: true });

const configChangeBase = {
  schemaVersion,
  type: z.literal('config.change'),
  revision: revision.min(1),
  committedAt: timestamp,
};

/**
 * One committed change set (fleet-format.md), at its gap-free revision. A change set too large
 * for a message (an import of a big fleet) is left out and said so: a consumer then reads the
 * configuration at this revision or a later one from the config-service (`GET /api/v1/export`).
 */
export const configChangeEventSchema = z.union([
  z.object({
    ...configChangeBase,
    /** The change set as committed: `upsert` and `delete` sections of fleet-format.md. */
    changeSet: z.object({
      upsert: z.record(z.string(), z.unknown()).optional(),
      delete: z.record(z.string(), z.unknown()).optional(),
    }),
  }),
  z.object({
    ...configChangeBase,
    /** The change set's size as JSON, in bytes: over what a message may carry. */
    changeSetOmitted: z.object({ bytes: z.number().int().positive() }),
  }),
]);

/** A node to generate at this revision or a newer one (work partitioned by node id). */
export const generationRequestSchema = z.object({
  schemaVersion,
  type: z.literal('generation.request'),
  nodeId,
  revision,
});

const fileDigest = z.object({ path: z.string().min(1), sha256 });

/** A node's new bundle (its hash changed): what it names is fetched by digest. */
export const bundleEventSchema = z
  .object({
    schemaVersion,
    type: z.literal('node.bundle'),
    nodeId,
    /** The revision the bundle was generated at, and when that revision was committed. */
    revision,
    committedAt: timestamp,
    /** When the generator published it (absent from bundles published before this field existed). */
    generatedAt: timestamp.optional(),
    /**
     * Generated in a catch-up — the regeneration after a generator's restart or an import — rather
     * than for a change of its own: its lag is counted apart.
     */
    catchUp: z.boolean().optional(),
    hash: bundleHash,
    /**
     * Every file of the bundle but the manifest, with its digest; contents are fetched by digest.
     * Since the manifest's parts (`.policygen/manifest-head.json`, `.policygen/manifest-properties.json`)
     * travel with the bundle, its manifest and `rudder-promises-generated` are put together where
     * the node is served, from the event and the parts (each still checked against its digest):
     * they are no blobs of the generator's cache (`BundleFiles` and the blob routes give them all the same).
     */
    files: z.array(fileDigest),
    /**
     * The digest of the bundle's `policy-manifest.json` (outputs.md), fetched by digest like the
     * other files: the event stays small however many files and policies a node has.
     */
    manifestSha256: sha256.optional(),
    /**
     * The manifest itself, as events carried it before `manifestSha256`: absent from new events,
     * still read by consumers of an older log. Every `node.bundle` has one of the two.
     */
    manifest: z.record(z.string(), z.unknown()).optional(),
  })
  .refine((event) => event.manifestSha256 !== undefined || event.manifest !== undefined, {
    message: 'a node.bundle names its manifest: manifestSha256 (or, before it, manifest)',
    path: ['manifestSha256'],
  });

/** A node's new bundle (its hash changed), or its removal from the fleet. */
export const nodeBundleEventSchema = z.discriminatedUnion('type', [
  bundleEventSchema,
  z.object({
    schemaVersion,
    type: z.literal('node.deleted'),
    nodeId,
    revision,
    committedAt: timestamp,
  }),
]);

const nodeError = z.object({
  code: z.string().min(1),
  message: z.string(),
  directiveIds: z.array(z.string()).optional(),
  ruleIds: z.array(z.string()).optional(),
  groupIds: z.array(z.string()).optional(),
});

/** What generating one node gave: a new bundle, the same one, or a failure (the last good one stays). */
export const generationEventSchema = z.object({
  schemaVersion,
  type: z.literal('generation.result'),
  nodeId,
  revision,
  outcome: z.enum(['generated', 'unchanged', 'failed']),
  /** The bundle hash now served: the new one, or the last good one after a failure (null if none). */
  hash: bundleHash.nullable(),
  errors: z.array(nodeError),
  durationMs: z.number().nonnegative(),
});

/** A relay confirmed it serves a node's bundle. */
export const distributionConfirmedEventSchema = z.object({
  schemaVersion,
  type: z.literal('distribution.confirmed'),
  relayId: z.string().min(1),
  nodeId,
  hash: bundleHash,
  revision,
  /** The stages of the bundle's way: its revision committed, generated, written to the root's feed, served by the relay. */
  committedAt: timestamp,
  generatedAt: timestamp,
  distributedAt: timestamp,
  confirmedAt: timestamp,
  /** From the revision's commit to the relay's confirmation. */
  lagMs: z.number().nonnegative(),
  /** The bundle came from a catch-up (restart or import), not from a change of its own. */
  catchUp: z.boolean().optional(),
});

/** A node fetched a bundle from its relay for the first time: the end of a change's way. */
export const nodeFetchedEventSchema = z.object({
  schemaVersion,
  type: z.literal('node.fetched'),
  relayId: z.string().min(1),
  nodeId,
  hash: bundleHash,
  revision,
  committedAt: timestamp,
  fetchedAt: timestamp,
  /** From the revision's commit to the node's fetch. */
  lagMs: z.number().nonnegative(),
  catchUp: z.boolean().optional(),
});

/** What distribution tells: relays' confirmations, and nodes' fetches. */
export const distributionEventSchema = z.discriminatedUnion('type', [
  distributionConfirmedEventSchema,
  nodeFetchedEventSchema,
]);

const epochMs = z.number().int().nonnegative();
const batchId = z.string().min(1);

/**
 * The `generation.result` events of one batch the generator published (a slice of a cycle), in one
 * message: the batch's fields once, each node as a `[nodeId, outcome, hash]` tuple in the order of
 * its event, and the failed nodes' errors in full (failures are rare). A batch too large for one
 * message is split into several summaries of the same revision.
 */
export const generationSummarySchema = z.object({
  schemaVersion,
  type: z.literal('generation.summary'),
  /** Unique per summary: a redelivered summary has the id it had. */
  batchId,
  revision,
  committedAt: timestamp,
  /** When the generator published the batch. */
  generatedAt: timestamp,
  catchUp: z.boolean().optional(),
  /** `[nodeId, outcome, hash]` per node, as its `generation.result` tells (hash: the bundle served, null if none). */
  results: z.array(z.tuple([nodeId, z.enum(['generated', 'unchanged', 'failed']), bundleHash.nullable()])),
  /** The errors of each failed node of `results`. */
  failures: z.array(z.object({ nodeId, errors: z.array(nodeError) })),
});

/**
 * The `distribution.confirmed` and `node.fetched` events of one batch the distribution-service
 * published (the confirmations a relay passed up), in one message, times as epoch milliseconds.
 * Each list keeps the order of its events.
 */
export const distributionSummarySchema = z.object({
  schemaVersion,
  type: z.literal('distribution.summary'),
  batchId,
  /** The newest revision of a bundle the batch confirms or reports fetched. */
  revision,
  /** When the distribution-service published the batch. */
  publishedAt: timestamp,
  /**
   * `[relayId, nodeId, revision, hash, committedAtMs, generatedAtMs, distributedAtMs, confirmedAtMs,
   * catchUp]` per `distribution.confirmed`.
   */
  confirmed: z.array(
    z.tuple([
      z.string().min(1),
      nodeId,
      revision,
      bundleHash,
      epochMs,
      epochMs,
      epochMs,
      epochMs,
      z.boolean(),
    ]),
  ),
  /** `[relayId, nodeId, revision, hash, committedAtMs, fetchedAtMs, catchUp]` per `node.fetched`. */
  fetched: z.array(z.tuple([z.string().min(1), nodeId, revision, bundleHash, epochMs, epochMs, z.boolean()])),
});

/** The pipeline's batches, summarised: what the per-node generation and distribution events tell, a batch a message. */
export const pipelineSummarySchema = z.discriminatedUnion('type', [
  generationSummarySchema,
  distributionSummarySchema,
]);

export type ConfigChangeEvent = z.infer<typeof configChangeEventSchema>;
export type GenerationRequest = z.infer<typeof generationRequestSchema>;
export type NodeBundleEvent = z.infer<typeof nodeBundleEventSchema>;
export type BundleEvent = z.infer<typeof bundleEventSchema>;
export type GenerationEvent = z.infer<typeof generationEventSchema>;
export type DistributionEvent = z.infer<typeof distributionEventSchema>;
export type DistributionConfirmedEvent = z.infer<typeof distributionConfirmedEventSchema>;
export type NodeFetchedEvent = z.infer<typeof nodeFetchedEventSchema>;
export type GenerationSummary = z.infer<typeof generationSummarySchema>;
export type DistributionSummary = z.infer<typeof distributionSummarySchema>;
export type PipelineSummary = z.infer<typeof pipelineSummarySchema>;

/** The schema of each topic's messages. */
export const EVENT_SCHEMAS = {
  [TOPICS.configChanges]: configChangeEventSchema,
  [TOPICS.generationRequests]: generationRequestSchema,
  [TOPICS.nodeBundles]: nodeBundleEventSchema,
  [TOPICS.generationEvents]: generationEventSchema,
  [TOPICS.distributionEvents]: distributionEventSchema,
  // A tombstone (no value) is a node's deletion; every value is its latest bundle.
  [TOPICS.latestBundles]: bundleEventSchema,
  [TOPICS.pipelineSummaries]: pipelineSummarySchema,
} as const satisfies Record<Topic, z.ZodType>;

export interface EventOf {
  [TOPICS.configChanges]: ConfigChangeEvent;
  [TOPICS.generationRequests]: GenerationRequest;
  [TOPICS.nodeBundles]: NodeBundleEvent;
  [TOPICS.generationEvents]: GenerationEvent;
  [TOPICS.distributionEvents]: DistributionEvent;
  [TOPICS.latestBundles]: BundleEvent;
  [TOPICS.pipelineSummaries]: PipelineSummary;
}

export type EventParse<T extends Topic> =
  | { readonly ok: true; readonly event: EventOf[T] }
  | { readonly ok: false; readonly issues: readonly { readonly path: string; readonly message: string }[] };

/** A file of a bundle as an event lists it. */
export type ListedFile = BundleEvent['files'][number];

/**
 * What a reader already holds and has checked, to spare checking it again: for a node, the files
 * of the bundle it holds (sorted by path), every digest of them checked when it arrived. A digest
 * never checked must not be given: the fast check would take it as it is.
 */
export interface ParseHints {
  heldFiles?(nodeId: string): readonly ListedFile[] | undefined;
}

/** Parses a message of a topic (JSON text or a value); every issue names its path. */
export function parseEvent<T extends Topic>(topic: T, message: unknown, hints?: ParseHints): EventParse<T> {
  let value = message;
  if (typeof message === 'string') {
    try {
      value = JSON.parse(message);
    } catch (error) {
      return { ok: false, issues: [{ path: '$', message: `not JSON: ${(error as Error).message}` }] };
    }
  }
  if ((topic === TOPICS.nodeBundles || topic === TOPICS.latestBundles) && plainBundleEvent(value, hints))
    return { ok: true, event: value as EventOf[T] };
  const result = (EVENT_SCHEMAS[topic] as z.ZodType).safeParse(value);
  if (result.success) return { ok: true, event: result.data as EventOf[T] };
  return {
    ok: false,
    issues: result.error.issues.map((issue) => ({
      path: [
        '$',
        ...issue.path.map((segment) =>
          typeof segment === 'number' ? `[${segment}]` : `.${String(segment)}`,
        ),
      ].join(''),
      message: issue.message,
    })),
  };
}

/**
 * The events of a batch of messages of a topic, in order, each with its message; a message that
 * is not a valid event goes to `unreadable` (a dead-letter topic) and is left out.
 */
export async function readEvents<T extends Topic, M extends { readonly value: Buffer }>(
  topic: T,
  messages: readonly M[],
  unreadable: (
    message: M,
    issues: readonly { readonly path: string; readonly message: string }[],
  ) => Promise<void>,
  hints?: ParseHints,
): Promise<{ readonly event: EventOf[T]; readonly message: M }[]> {
  const events: { event: EventOf[T]; message: M }[] = [];
  for (const message of messages) {
    const parsed = parseEvent(topic, message.value.toString('utf8'), hints);
    if (parsed.ok) events.push({ event: parsed.event, message });
    else await unreadable(message, parsed.issues);
  }
  return events;
}

/** The JSON Schema (draft 2020-12) of a topic's messages, as published in `schemas/`. */
export function jsonSchemaOf(topic: Topic): Record<string, unknown> {
  return {
    $id: `https://policygen.dev/schemas/${topic}.schema.json`,
    title: topic,
    ...z.toJSONSchema(EVENT_SCHEMAS[topic] as z.ZodType, { io: 'input' }),
  };
}

const BUNDLE_EVENT_KEYS = new Set([
  'schemaVersion',
  'type',
  'nodeId',
  'revision',
  'committedAt',
  'generatedAt',
  'catchUp',
  'hash',
  'files',
  'manifestSha256',
]);

/**
 * Whether a value is a `node.bundle` event exactly as `bundleEventSchema` reads one (no other key,
 * so its parse would be equal to it), told without the schema: a distributor reads one per node
 * change, ~35 files each, and the schema's parse — a copy, a regular expression per digest — cost
 * more than the rest of handling it. Stricter than the schema, never looser (a property test);
 * what it turns down goes to the schema, which says why.
 */
export function plainBundleEvent(value: unknown, hints?: ParseHints): value is BundleEvent {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const event = value as Record<string, unknown>;
  for (const key in event) if (!BUNDLE_EVENT_KEYS.has(key)) return false;
  const { schemaVersion, type, nodeId, revision, committedAt, generatedAt, catchUp, hash, files } = event;
  if (
    schemaVersion !== 1 ||
    type !== 'node.bundle' ||
    typeof nodeId !== 'string' ||
    nodeId.length === 0 ||
    !Number.isSafeInteger(revision) ||
    (revision as number) < 0 ||
    !isInstant(committedAt) ||
    (generatedAt !== undefined && !isInstant(generatedAt)) ||
    (catchUp !== undefined && typeof catchUp !== 'boolean') ||
    !isBundleHash(hash) ||
    !isSha256Hex(event['manifestSha256']) ||
    !Array.isArray(files)
  )
    return false;
  // Most of a node's files are those of the bundle the reader holds for it, at the same paths: a
  // digest equal to the held one there was checked when that bundle came, and comparing two
  // strings costs a fraction of checking 64 characters (one lookup per event, not per digest: a
  // lookup in a map of ~10^5 digests missed the CPU's caches and cost more than the check).
  const held = hints?.heldFiles?.(nodeId);
  let next = 0;
  for (const file of files as unknown[]) {
    if (typeof file !== 'object' || file === null || Array.isArray(file)) return false;
    const { path, sha256: digest } = file as Record<string, unknown>;
    if (Object.keys(file).length !== 2 || typeof path !== 'string' || path.length === 0) return false;
    let known = false;
    if (held !== undefined) {
      // Both lists sorted by path; the held one may have one more file here (its manifest).
      if (held[next]?.path !== path && held[next + 1]?.path === path) next++;
      const same = held[next];
      if (same?.path === path) {
        known = same.sha256 === digest;
        next++;
      }
    }
    if (!known && !isSha256Hex(digest)) return false;
  }
  return true;
}

const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** An instant as `toISOString` writes it (what the services write), and a real one. */
function isInstant(value: unknown): boolean {
  if (typeof value !== 'string' || !INSTANT.test(value)) return false;
  const time = Date.parse(value);
  return !Number.isNaN(time) && new Date(time).toISOString() === value;
}

/** Whether a value is 64 lowercase hex digits (a SHA-256 as the pipeline writes it), told without a regular expression. */
export function isSha256Hex(value: unknown): value is string {
  return typeof value === 'string' && value.length === 64 && isHex64(value, 0);
}

/** Whether a value is a bundle hash, `sha256:` and 64 lowercase hex digits. */
export function isBundleHash(value: unknown): value is string {
  return typeof value === 'string' && value.length === 71 && value.startsWith('sha256:') && isHex64(value, 7);
}

/** 1 at the char codes of the lowercase hex digits. */
const HEX_DIGIT = new Uint8Array(128);
for (const digit of '0123456789abcdef') HEX_DIGIT[digit.charCodeAt(0)] = 1;

/**
 * 64 lowercase hex digits from `from` (the length checked by the caller), without a regular
 * expression: a table lookup per character (a distributor checks ~35 digests per node change).
 */
function isHex64(text: string, from: number): boolean {
  for (let index = from; index < from + 64; index++) {
    const code = text.charCodeAt(index);
    if (code >= 128 || HEX_DIGIT[code] !== 1) return false;
  }
  return true;
}
