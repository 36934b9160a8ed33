import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Per-node credentials: `<nodeId>.<expiresAt>.<mac>`, `expiresAt` in Unix seconds and the MAC an
 * HMAC-SHA256 of `<nodeId>.<expiresAt>` under the node's key. The node's key is an HMAC of the node
 * id under the deployment's secret, which only the config-service and the distribution-service
 * hold; the feed gives each relay the keys of the nodes it serves, so that a relay checks a token
 * without the secret (a relay is trusted with its subtree: it holds those nodes' policies anyway).
 * Rotating the secret changes every key, hence revokes every token.
 */
export interface NodeTokenClaim {
  readonly nodeId: string;
  /** Unix seconds. */
  readonly expiresAt: number;
  readonly mac: string;
}

/** A node's key (hex): what the feed carries so that its relays can check its tokens. */
export function nodeKey(secret: string, nodeId: string): string {
  return createHmac('sha256', secret).update(`policygen-node-key:${nodeId}`).digest('hex');
}

/** A token for the node, valid until `expiresAt` (to the second, rounded down). */
export function issueNodeToken(secret: string, nodeId: string, expiresAt: Date): string {
  const expires = Math.floor(expiresAt.getTime() / 1000);
  return `${nodeId}.${expires}.${nodeTokenMac(nodeKey(secret, nodeId), nodeId, expires)}`;
}

/** What a token claims, or null when it is not shaped like a node token. Nothing is verified here. */
export function parseNodeToken(token: string): NodeTokenClaim | null {
  const macDot = token.lastIndexOf('.');
  const expiresDot = macDot > 0 ? token.lastIndexOf('.', macDot - 1) : -1;
  if (expiresDot <= 0) return null;
  const nodeId = token.slice(0, expiresDot);
  const expiresText = token.slice(expiresDot + 1, macDot);
  const mac = token.slice(macDot + 1);
  if (!/^[0-9]{1,12}$/.test(expiresText) || !/^[A-Za-z0-9_-]{43}$/.test(mac)) return null;
  return { nodeId, expiresAt: Number(expiresText), mac };
}

/**
 * Whether a claim is signed with the node's key (hex) and not expired at `nowMs`: one HMAC, in
 * constant time. A claim for another node than the key's fails, the key being per node.
 */
export function nodeTokenValid(claim: NodeTokenClaim, key: string, nowMs: number): boolean {
  if (claim.expiresAt * 1000 <= nowMs) return false;
  // The encoded texts are compared, not the bytes they decode to: the last of 43 base64url
  // characters carries 2 unused bits, so 4 spellings would decode to one MAC.
  const expected = Buffer.from(nodeTokenMac(key, claim.nodeId, claim.expiresAt), 'ascii');
  const presented = Buffer.from(claim.mac, 'ascii');
  return presented.length === expected.length && timingSafeEqual(presented, expected);
}

function nodeTokenMac(key: string, nodeId: string, expiresAt: number): string {
  return createHmac('sha256', Buffer.from(key, 'hex')).update(`${nodeId}.${expiresAt}`).digest('base64url');
}
