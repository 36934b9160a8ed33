import type { Principal } from './principal';

/**
 * How a service recognises a bearer credential: the principal it stands for, or null when it is
 * unknown, revoked or expired (401 either way: the caller learns nothing about which).
 */
export interface Authenticator {
  authenticate(token: string): Principal | null | Promise<Principal | null>;
}

/** A service that knows no credential: only its public routes answer. */
export const NO_CREDENTIALS: Authenticator = { authenticate: () => null };

/** Several authenticators, asked in order: the first that knows the credential answers. */
export function firstOf(...authenticators: readonly Authenticator[]): Authenticator {
  return {
    async authenticate(token) {
      for (const authenticator of authenticators) {
        const principal = await authenticator.authenticate(token);
        if (principal) return principal;
      }
      return null;
    },
  };
}
