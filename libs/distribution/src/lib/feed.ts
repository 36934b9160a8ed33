import { z } from 'zod';
import { isBundleHash, isSha256Hex } from '@policygen/sdk';

export { isSha256Hex };

const sha256 = z.string().regex(/^[0-9a-f]{64}$/);
/** An instant as the services write them (`toISOString`), an offset allowed: never free text. */
const instant = z.iso.datetime({ offset: true });

export const feedFileSchema = z.object({ path: z.string().min(1), sha256 });

export const feedBundleSchema = z.object({
  hash: z.string().regex(/^sha256:[0-9a-f]{64}$/),
  revision: z.number().int().nonnegative(),
  /** When the revision was committed, the bundle generated, and the entry written at the root (ISO 8601). */
  committedAt: z.string(),
  generatedAt: z.string(),
  distributedAt: z.string(),
  /** Every file of the node's tree, `policy-manifest.json` included, sorted by path. */
  files: z.array(feedFileSchema),
  /**
   * The key the node's tokens are signed with (node-token.ts), hex: its relays check its tokens
   * with it. Null when no token secret is configured (nobody can fetch); absent from entries written
   * before tokens expired, which the distribution-service writes again with it when it starts.
   */
  nodeKey: sha256.nullable().optional(),
  /** Before expiring tokens: the SHA-256 of the node's token. Read from older logs, never written. */
  tokenDigest: sha256.nullable().optional(),
  /** Generated in a catch-up (a restart's or an import's regeneration), not for a change of its own. */
  catchUp: z.boolean().optional(),
});

/**
 * One change of one node's bundle or of where it is served, at a position (`seq`) of the root's
 * feed. Relays keep the root's positions, so a cursor means the same thing at every level.
 */
export const feedEntrySchema = z.object({
  seq: z.number().int().positive(),
  nodeId: z.string().min(1),
  /** The relays that serve the node now, from `root` down; empty when it is served nowhere. */
  path: z.array(z.string()),
  /** The relays that served it before: a relay on this path but not on `path` drops the node. */
  previousPath: z.array(z.string()),
  /** The revision of the node's latest bundle, or of its removal: an older one is stale. */
  revision: z.number().int().nonnegative(),
  /** The node's bundle; null when it has none any more (left the fleet, or ignored). */
  bundle: feedBundleSchema.nullable(),
});

/**
 * A relay below the one a feed page is for, and the digest of its credential (relay-token.ts): a
 * relay authenticates the relays of its subtree without the deployment's secret.
 */
export const subtreeRelaySchema = z.object({
  relayId: z.string().min(1),
  /** `root`, then each relay down to this one (itself included). */
  path: z.array(z.string().min(1)).min(1),
  credentialDigest: sha256,
});

export const feedPageSchema = z.object({
  entries: z.array(feedEntrySchema),
  /** The cursor to ask with next: every entry up to it has been given. */
  next: z.number().int().nonnegative(),
  /** Where the answering feed stands (its last position and newest revision): how far behind the asker is. */
  head: z
    .object({ seq: z.number().int().nonnegative(), revision: z.number().int().nonnegative() })
    .optional(),
  /**
   * Every relay below the asker, with its credential's digest, as the parent knows them now (not as
   * of the cursor). Absent from parents older than relay credentials: the asker keeps what it knew.
   */
  relays: z.array(subtreeRelaySchema).optional(),
  /**
   * Blobs of the page's bundles given with it (base64 by digest), when the asker asked for them
   * (`inlineBytes`): small ones that a single bundle names, new with it most likely. The asker
   * checks each against its digest, and asks for the others as before.
   */
  blobs: z.record(sha256, z.string()).optional(),
});

export const confirmationSchema = z.object({
  relayId: z.string().min(1),
  nodeId: z.string().min(1),
  hash: z.string(),
  revision: z.number().int().nonnegative(),
  committedAt: instant,
  generatedAt: instant,
  distributedAt: instant,
  /** When the relay had switched the node's tree to this bundle. */
  confirmedAt: instant,
  catchUp: z.boolean().optional(),
  /**
   * Set on a fetch report, not a confirmation: the node itself fetched this bundle from the relay
   * then (the last stage of a change), reported up the tree as confirmations are.
   */
  fetchedAt: instant.optional(),
});

export const confirmationsSchema = z.object({ confirmations: z.array(confirmationSchema) });

export type FeedFile = z.infer<typeof feedFileSchema>;
export type FeedBundle = z.infer<typeof feedBundleSchema>;
export type FeedEntry = z.infer<typeof feedEntrySchema>;
export type FeedPage = z.infer<typeof feedPageSchema>;
export type SubtreeRelay = z.infer<typeof subtreeRelaySchema>;
export type Confirmation = z.infer<typeof confirmationSchema>;

/** What an entry means to one relay: keep the bundle, drop the node, or nothing. */
export function entryFor(entry: FeedEntry, relayId: string): 'keep' | 'drop' | null {
  if (entry.path.includes(relayId)) return entry.bundle ? 'keep' : 'drop';
  return entry.previousPath.includes(relayId) ? 'drop' : null;
}

/**
 * What a relay confirms once entries are on its disk, `confirmedAt` then: the bundles it keeps, one
 * per entry in the order given (pass a node's latest entry only, when several came together).
 */
export function confirmationsOf(
  entries: Iterable<FeedEntry>,
  relayId: string,
  confirmedAt: string,
): Confirmation[] {
  const confirmations: Confirmation[] = [];
  for (const entry of entries) {
    if (entryFor(entry, relayId) !== 'keep' || !entry.bundle) continue;
    const { hash, revision, committedAt, generatedAt, distributedAt, catchUp } = entry.bundle;
    confirmations.push({
      ...(catchUp ? { catchUp } : {}),
      relayId,
      nodeId: entry.nodeId,
      hash,
      revision,
      committedAt,
      generatedAt,
      distributedAt,
      confirmedAt,
    });
  }
  return confirmations;
}

const ENTRY_KEYS = 6;
const BUNDLE_REQUIRED = ['hash', 'revision', 'committedAt', 'generatedAt', 'distributedAt', 'files'] as const;

/**
 * The value itself when it is a feed entry exactly as `feedEntrySchema` reads one (no other keys,
 * so that its parse would be equal to it); undefined when it is not, or when only the schema can
 * tell (then ask it, for the answer and its reasons). A relay reads thousands of entries of ~35
 * files a page: the schema's parse of each, a copy with a regular expression per digest, cost more
 * than the rest of applying the page. Stricter than the schema, never looser (a property test).
 */
export function plainFeedEntry(value: unknown): FeedEntry | undefined {
  if (!isRecord(value)) return undefined;
  const { seq, nodeId, path, previousPath, revision, bundle } = value;
  if (
    Object.keys(value).length !== ENTRY_KEYS ||
    !Number.isSafeInteger(seq) ||
    (seq as number) <= 0 ||
    typeof nodeId !== 'string' ||
    nodeId.length === 0 ||
    !isStringArray(path) ||
    !isStringArray(previousPath) ||
    !isCount(revision) ||
    (bundle !== null && !isPlainBundle(bundle))
  )
    return undefined;
  return value as FeedEntry;
}

function isPlainBundle(value: unknown): boolean {
  if (!isRecord(value)) return false;
  let known = BUNDLE_REQUIRED.length;
  for (const key of BUNDLE_REQUIRED) if (!(key in value)) return false;
  const { hash, revision, committedAt, generatedAt, distributedAt, files } = value;
  if (
    !isBundleHash(hash) ||
    !isCount(revision) ||
    typeof committedAt !== 'string' ||
    typeof generatedAt !== 'string' ||
    typeof distributedAt !== 'string' ||
    !Array.isArray(files)
  )
    return false;
  for (const key of ['nodeKey', 'tokenDigest'] as const)
    if (key in value) {
      const digest = value[key];
      if (digest !== null && !isSha256Hex(digest)) return false;
      known++;
    }
  if ('catchUp' in value) {
    if (typeof value['catchUp'] !== 'boolean') return false;
    known++;
  }
  if (Object.keys(value).length !== known) return false;
  for (const file of files as unknown[]) {
    if (!isRecord(file) || Object.keys(file).length !== 2) return false;
    const { path, sha256 } = file;
    if (typeof path !== 'string' || path.length === 0) return false;
    if (!isSha256Hex(sha256)) return false;
  }
  return true;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isStringArray(value: unknown): boolean {
  return Array.isArray(value) && value.every((item) => typeof item === 'string');
}

function isCount(value: unknown): boolean {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}
