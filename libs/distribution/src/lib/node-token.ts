import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Per-node credentials. The config-service issues `<nodeId>.<mac>`, the MAC an HMAC-SHA256 of the
 * node id under a secret it shares with the distribution-service only. Relays never hold the secret:
 * the feed gives them each node's token digest, which they compare with what a node presents.
 */
export function issueNodeToken(secret: string, nodeId: string): string {
  const mac = createHmac('sha256', secret).update(`policygen-node:${nodeId}`).digest('base64url');
  return `${nodeId}.${mac}`;
}

/** What the feed carries instead of the token: its SHA-256, hex. */
export function nodeTokenDigest(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** The node a bearer token claims to be (the part before the last dot), or null if malformed. */
export function claimedNodeId(token: string): string | null {
  const dot = token.lastIndexOf('.');
  return dot > 0 && dot < token.length - 1 ? token.slice(0, dot) : null;
}

/** Whether a presented token matches a digest from the feed, in constant time. */
export function tokenMatches(token: string, digest: string): boolean {
  const presented = Buffer.from(nodeTokenDigest(token), 'hex');
  const expected = Buffer.from(digest, 'hex');
  return presented.length === expected.length && timingSafeEqual(presented, expected);
}
