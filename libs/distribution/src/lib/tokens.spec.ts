import fc from 'fast-check';
import { issueNodeToken, nodeKey, nodeTokenValid, parseNodeToken } from './node-token';
import { claimedRelayId, issueRelayToken, relayCredentialDigest, verifyRelayToken } from './relay-token';

const SECRET = 'a-deployment-secret-long-enough';
/** Ids as the fleet format allows them: dots included, which the token formats must not trip on. */
const id = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,40}$/);
const NOW = Date.UTC(2026, 10, 26, 10, 0, 0);
const future = fc.integer({ min: 1, max: 400 * 86_400 }).map((seconds) => new Date(NOW + seconds * 1000));

/** The token with one character of one part changed for another allowed there. */
function tampered(token: string, at: number, replacement: string): string | null {
  const index = at % token.length;
  const changed = `${token.slice(0, index)}${replacement}${token.slice(index + 1)}`;
  return changed === token ? null : changed;
}

describe('node tokens', () => {
  it('name their node and expiry, and verify with the node key until they expire', () => {
    fc.assert(
      fc.property(id, future, (nodeId, expiresAt) => {
        const token = issueNodeToken(SECRET, nodeId, expiresAt);
        const claim = parseNodeToken(token);
        expect(claim).toMatchObject({ nodeId, expiresAt: Math.floor(expiresAt.getTime() / 1000) });
        if (!claim) return;
        const key = nodeKey(SECRET, nodeId);
        expect(nodeTokenValid(claim, key, NOW)).toBe(true);
        expect(nodeTokenValid(claim, key, expiresAt.getTime() + 1000)).toBe(false);
        expect(nodeTokenValid(claim, nodeKey('another-secret-long-enough', nodeId), NOW)).toBe(false);
      }),
    );
  });

  it('refuse any token changed in one character: the node, the expiry or the MAC', () => {
    fc.assert(
      fc.property(
        id,
        future,
        fc.nat(),
        fc.constantFrom('a', 'Z', '0', '9', '.', '-', '_'),
        (nodeId, expiresAt, at, by) => {
          const token = issueNodeToken(SECRET, nodeId, expiresAt);
          const forged = tampered(token, at, by);
          fc.pre(forged !== null);
          const claim = parseNodeToken(forged ?? '');
          // A forged claim (if it still reads as one) verifies with neither its own node's key nor the original's.
          const verifies = (key: string): boolean => claim !== null && nodeTokenValid(claim, key, NOW);
          expect(verifies(nodeKey(SECRET, claim?.nodeId ?? nodeId))).toBe(false);
          expect(verifies(nodeKey(SECRET, nodeId))).toBe(false);
        },
      ),
    );
  });

  it('refuses another spelling of its MAC that decodes to the same bytes', () => {
    const token = issueNodeToken(SECRET, 'n1', new Date(NOW + 86_400_000));
    const last = token.at(-1) ?? '';
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    // The same 4 high bits, other unused low bits.
    const sibling = alphabet[(alphabet.indexOf(last) & ~3) | ((alphabet.indexOf(last) + 1) & 3)] ?? last;
    expect(sibling).not.toBe(last);
    const claim = parseNodeToken(`${token.slice(0, -1)}${sibling}`);
    expect(claim).not.toBeNull();
    expect(claim !== null && nodeTokenValid(claim, nodeKey(SECRET, 'n1'), NOW)).toBe(false);
  });

  it('does not read what is not shaped like one', () => {
    for (const text of ['', 'n1', 'n1.123', '.123.mac', 'n1.soon.' + 'a'.repeat(43), 'n1.123.short'])
      expect(parseNodeToken(text)).toBeNull();
  });

  it('cannot be stretched: the expiry is signed', () => {
    const token = issueNodeToken(SECRET, 'web.1', new Date(NOW - 1000));
    const claim = parseNodeToken(token);
    if (!claim) throw new Error('not parsed');
    expect(nodeTokenValid(claim, nodeKey(SECRET, 'web.1'), NOW)).toBe(false);
    expect(
      nodeTokenValid({ ...claim, expiresAt: claim.expiresAt + 86_400 }, nodeKey(SECRET, 'web.1'), NOW),
    ).toBe(false);
  });
});

describe('relay credentials', () => {
  it('name their relay and verify with the secret, or by their digest', () => {
    fc.assert(
      fc.property(id, (relayId) => {
        const token = issueRelayToken(SECRET, relayId);
        expect(claimedRelayId(token)).toBe(relayId);
        expect(verifyRelayToken(SECRET, token)).toBe(relayId);
        expect(verifyRelayToken('another-secret-long-enough', token)).toBeNull();
        expect(relayCredentialDigest(token)).toMatch(/^[0-9a-f]{64}$/);
        // Domain-separated from node tokens: one shaped like a node token does not verify as one.
        const asNode = parseNodeToken(token);
        expect(asNode !== null && nodeTokenValid(asNode, nodeKey(SECRET, asNode.nodeId), 0)).toBe(false);
      }),
    );
  });

  it('refuse any credential changed in one character', () => {
    fc.assert(
      fc.property(id, fc.nat(), fc.constantFrom('a', 'Z', '0', '.', '-', '_'), (relayId, at, by) => {
        const forged = tampered(issueRelayToken(SECRET, relayId), at, by);
        fc.pre(forged !== null);
        expect(verifyRelayToken(SECRET, forged ?? '')).toBeNull();
      }),
    );
  });
});
