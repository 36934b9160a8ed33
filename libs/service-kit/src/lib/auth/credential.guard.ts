import { ForbiddenException, Inject, Injectable, UnauthorizedException } from '@nestjs/common';
import type { CanActivate, ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { Counter } from 'prom-client';
import type { ServiceShellOptions } from '../service-shell.options';
import { SERVICE_SHELL_OPTIONS } from '../service-shell.options';
import type { AccessRequirement } from './access';
import { ACCESS_REQUIREMENT, PUBLIC_ROUTE } from './access';
import { NO_CREDENTIALS } from './authenticator';
import { bearerToken } from './bearer';
import type { Principal } from './principal';
import { roleAllows } from './principal';

/** A request once its caller is known: controllers read `principal` (the audit trail's "who"). */
export interface AuthenticatedRequest {
  principal?: Principal;
}

interface GuardedRequest extends AuthenticatedRequest {
  readonly method: string;
  readonly headers: Record<string, string | string[] | undefined>;
}

interface HeaderWriter {
  setHeader(name: string, value: string): void;
}

const SAFE_METHODS = new Set(['GET', 'HEAD']);

/**
 * Every route of every service asks for a credential unless it is `@Public()`: 401 without one or
 * with one the service does not know (with `WWW-Authenticate: Bearer`), 403 when the principal may
 * not call the route. Secure by default: a route nobody marked is an API-token route.
 */
@Injectable()
export class CredentialGuard implements CanActivate {
  private readonly refusals: Counter<'service' | 'status'>;

  constructor(
    @Inject(Reflector) private readonly reflector: Reflector,
    @Inject(SERVICE_SHELL_OPTIONS) private readonly options: ServiceShellOptions,
  ) {
    const name = 'policygen_http_auth_refusals_total';
    this.refusals =
      (options.registry.getSingleMetric(name) as Counter<'service' | 'status'> | undefined) ??
      new Counter({
        name,
        help: 'Requests refused for their credential: 401 (none, unknown, revoked or expired) or 403 (not allowed)',
        labelNames: ['service', 'status'],
        registers: [options.registry],
      });
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, targets)) return true;
    const request = context.switchToHttp().getRequest<GuardedRequest>();
    const response = context.switchToHttp().getResponse<HeaderWriter>();
    const token = bearerToken(request.headers['authorization']);
    if (token === null)
      throw this.unauthorized(response, 'a credential is required: Authorization: Bearer <token>');
    const authenticator = this.options.authenticator ?? NO_CREDENTIALS;
    const principal = await authenticator.authenticate(token);
    if (!principal)
      throw this.unauthorized(response, 'the credential is not valid: unknown, revoked or expired');
    const requirement = this.reflector.getAllAndOverride<AccessRequirement | undefined>(
      ACCESS_REQUIREMENT,
      targets,
    );
    const refusal = refusalOf(principal, requirement, request.method);
    if (refusal !== null) {
      this.refusals.inc({ service: this.options.service, status: '403' });
      throw new ForbiddenException(refusal);
    }
    request.principal = principal;
    return true;
  }

  private unauthorized(response: HeaderWriter, message: string): UnauthorizedException {
    this.refusals.inc({ service: this.options.service, status: '401' });
    // RFC 6750: a 401 says which scheme would be accepted.
    response.setHeader('WWW-Authenticate', `Bearer realm="policygen-${this.options.service}"`);
    return new UnauthorizedException(message);
  }
}

/** Why `principal` may not call a route asking `requirement` with `method`, or null if it may. */
export function refusalOf(
  principal: Principal,
  requirement: AccessRequirement | undefined,
  method: string,
): string | null {
  const kinds = requirement?.kinds ?? ['api'];
  if (!kinds.includes(principal.kind))
    return `this route is for ${kinds.map((kind) => `${kind} credentials`).join(' or ')}, not a ${principal.kind} credential`;
  if (principal.kind !== 'api') return null;
  const role = requirement?.role ?? (SAFE_METHODS.has(method.toUpperCase()) ? 'reader' : 'editor');
  return roleAllows(principal.role, role)
    ? null
    : `the token "${principal.name}" is a ${principal.role}'s; this needs the ${role} role`;
}
