import { createHash, timingSafeEqual } from 'node:crypto';

/** The credential of an `Authorization: Bearer <token>` header, or null when there is none. */
export function bearerToken(authorization: string | readonly string[] | undefined): string | null {
  const header = Array.isArray(authorization) ? authorization[0] : authorization;
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(typeof header === 'string' ? header : '');
  return match?.[1] ?? null;
}

/** SHA-256 of a secret, hex: what is stored and compared instead of the secret. */
export function secretDigest(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/**
 * Whether two secrets are equal, in time that depends on neither: both are hashed first, so their
 * lengths leak nothing either.
 */
export function secretsEqual(presented: string, expected: string): boolean {
  return timingSafeEqual(
    createHash('sha256').update(presented, 'utf8').digest(),
    createHash('sha256').update(expected, 'utf8').digest(),
  );
}

/** Whether a presented secret's digest is the stored one (hex), in constant time. */
export function digestMatches(presented: string, storedDigest: string): boolean {
  const expected = Buffer.from(storedDigest, 'hex');
  const actual = createHash('sha256').update(presented, 'utf8').digest();
  return expected.length === actual.length && timingSafeEqual(actual, expected);
}
