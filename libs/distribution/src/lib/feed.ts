import { z } from 'zod';

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
