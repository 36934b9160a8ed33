import { SetMetadata } from '@nestjs/common';
import type { PrincipalKind, Role } from './principal';

export const PUBLIC_ROUTE = 'policygen:public-route';
export const ACCESS_REQUIREMENT = 'policygen:access-requirement';

/**
 * What a route asks of its caller. Without it, a route wants an API token whose role is at least
 * `reader` for GET and HEAD and `editor` for anything else.
 */
export interface AccessRequirement {
  /** The kinds of principal it serves (default: `api`). */
  readonly kinds?: readonly PrincipalKind[];
  /** For API tokens, the least role (default: by method). */
  readonly role?: Role;
}

/** A route anyone may call: probes, scrapes, the API's description. The list is in the README. */
export const Public = (): MethodDecorator & ClassDecorator => SetMetadata(PUBLIC_ROUTE, true);

/** What a route or a controller asks of its caller: see `AccessRequirement`. */
export const Requires = (requirement: AccessRequirement): MethodDecorator & ClassDecorator =>
  SetMetadata(ACCESS_REQUIREMENT, requirement);
