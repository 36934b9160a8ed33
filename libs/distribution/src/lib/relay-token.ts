import { createHmac, timingSafeEqual } from 'node:crypto';
import { secretDigest } from '@policygen/service-kit';

const PREFIX = 'relay.';

/**
 * A relay's credential for its parent: `relay.<relayId>.<mac>`, the MAC an HMAC-SHA256 of the relay
 * id under the deployment's secret (the node tokens' secret, in a domain of its own). The
 * distribution-service checks it with the secret; a relay, which never holds the secret, learns the
 * digests of its subtree's relays' credentials from its feed. Issuing it again gives the same one;
 * rotating the secret revokes them all.
 */
export function issueRelayToken(secret: string, relayId: string): string {
  return `${PREFIX}${relayId}.${relayTokenMac(secret, relayId)}`;
}

/** The relay a credential claims to be, or null when it is not shaped like a relay credential. */
export function claimedRelayId(token: string): string | null {
  if (!token.startsWith(PREFIX)) return null;
  const dot = token.lastIndexOf('.');
  if (dot <= PREFIX.length) return null;
  return /^[A-Za-z0-9_-]{43}$/.test(token.slice(dot + 1)) ? token.slice(PREFIX.length, dot) : null;
}

/** The relay whose credential this is, checked with the secret in constant time; null otherwise. */
export function verifyRelayToken(secret: string, token: string): string | null {
  const relayId = claimedRelayId(token);
  if (relayId === null) return null;
  // Texts, not decoded bytes: the last base64url character has unused bits (see node-token.ts).
  const expected = Buffer.from(relayTokenMac(secret, relayId), 'ascii');
  const presented = Buffer.from(token.slice(token.lastIndexOf('.') + 1), 'ascii');
  return presented.length === expected.length && timingSafeEqual(presented, expected) ? relayId : null;
}

/** What the feed carries instead of a relay's credential: its SHA-256, hex. */
export function relayCredentialDigest(token: string): string {
  return secretDigest(token);
}

function relayTokenMac(secret: string, relayId: string): string {
  return createHmac('sha256', secret).update(`policygen-relay:${relayId}`).digest('base64url');
}
