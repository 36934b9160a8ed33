import { createParamDecorator } from '@nestjs/common';
import type { ExecutionContext } from '@nestjs/common';

/** Who a write is recorded as when the request carries no authenticated principal. */
export const ANONYMOUS = 'anonymous';

/** The author a request's writes are recorded as: its principal's name (an API token's), or `anonymous`. */
export function actorOf(request: unknown): string {
  const name = (request as { principal?: { name?: unknown } } | undefined)?.principal?.name;
  return typeof name === 'string' && name !== '' ? name : ANONYMOUS;
}

/** The author of the request's writes, as a handler parameter (see `actorOf`). */
export const Actor = createParamDecorator((_data: unknown, context: ExecutionContext): string =>
  actorOf(context.switchToHttp().getRequest<unknown>()),
);
