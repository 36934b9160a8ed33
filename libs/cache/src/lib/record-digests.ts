import type { NodeBundleRecord } from './bundle-cache';

const DIGEST_LENGTH = 64;

/**
 * A record's digests as a cache keeps them: one after the other, each of exactly 64 characters,
 * so that Redis's script cuts them apart without decoding anything.
 */
export function digestsText(bundle: Pick<NodeBundleRecord, 'nodeId' | 'digests'>): string {
  for (const digest of bundle.digests)
    if (digest.length !== DIGEST_LENGTH)
      throw new Error(`node ${bundle.nodeId}: a digest of ${digest.length} characters, not ${DIGEST_LENGTH}`);
  return bundle.digests.join('');
}

/** The digests of a record's text (`digestsText`), in their order. */
export function splitDigests(text: string): string[] {
  const digests: string[] = [];
  for (let at = 0; at < text.length; at += DIGEST_LENGTH) digests.push(text.slice(at, at + DIGEST_LENGTH));
  return digests;
}
