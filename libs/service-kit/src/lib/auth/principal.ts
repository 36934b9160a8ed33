/** What an API token may do: each role may do what the roles before it may. */
export const ROLES = ['reader', 'editor', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/**
 * Who made a request, once its bearer credential is known:
 * - `api`: an API token of the config API (people, the CLI, the services that read the configuration);
 * - `relay`: a relay reading its feed and blobs from its parent;
 * - `node`: a node reading its own policies.
 */
export type Principal =
  | { readonly kind: 'api'; readonly name: string; readonly role: Role; readonly tokenId: string }
  | { readonly kind: 'relay'; readonly relayId: string }
  | { readonly kind: 'node'; readonly nodeId: string };

export type PrincipalKind = Principal['kind'];

/** Whether `role` includes what `needed` allows. */
export function roleAllows(role: Role, needed: Role): boolean {
  return ROLES.indexOf(role) >= ROLES.indexOf(needed);
}

/** A principal as logs and audit records name it. */
export function principalName(principal: Principal): string {
  switch (principal.kind) {
    case 'api':
      return principal.name;
    case 'relay':
      return `relay:${principal.relayId}`;
    case 'node':
      return `node:${principal.nodeId}`;
  }
}
