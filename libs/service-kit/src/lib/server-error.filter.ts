import { Catch, HttpException, HttpStatus } from '@nestjs/common';
import type { ArgumentsHost } from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import type { Response } from 'express';
import { isTransientFailure } from '@policygen/messaging';

/** What a client told to retry waits first (Postgres restarts in seconds). */
const RETRY_AFTER_SECONDS = 5;

/**
 * Errors a handler did not turn into a 4xx: answered as a JSON 500 (or the 5xx it carried) and
 * handed to the request log (`res.err`), which writes one JSON line with the method, the path,
 * the status, the duration and the error's stack. A dependency that is away for the moment (Postgres
 * restarting, the bus unreachable) is a 503 with Retry-After, not a 500: the client may retry, and a
 * failed transaction changed nothing. Client errors go through Nest as usual.
 */
@Catch()
export class ServerErrorFilter extends BaseExceptionFilter {
  override catch(exception: unknown, host: ArgumentsHost): void {
    const status =
      exception instanceof HttpException ? exception.getStatus() : HttpStatus.INTERNAL_SERVER_ERROR;
    if (host.getType() !== 'http' || status < 500) {
      super.catch(exception, host);
      return;
    }
    const response = host.switchToHttp().getResponse<Response & { err?: unknown }>();
    response.err = exception instanceof Error ? exception : new Error(String(exception));
    if (response.headersSent) {
      response.end();
      return;
    }
    if (!(exception instanceof HttpException) && isTransientFailure(exception)) {
      response
        .status(HttpStatus.SERVICE_UNAVAILABLE)
        .setHeader('retry-after', String(RETRY_AFTER_SECONDS))
        .json({
          statusCode: HttpStatus.SERVICE_UNAVAILABLE,
          message: 'A store or the event bus is unavailable for the moment; nothing was changed, retry later',
        });
      return;
    }
    const body =
      exception instanceof HttpException
        ? exception.getResponse()
        : { statusCode: status, message: 'Internal server error' };
    response.status(status).json(typeof body === 'string' ? { statusCode: status, message: body } : body);
  }
}
