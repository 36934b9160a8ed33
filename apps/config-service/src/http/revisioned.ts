import { Injectable } from '@nestjs/common';
import type { CallHandler, ExecutionContext, NestInterceptor } from '@nestjs/common';
import type { Observable } from 'rxjs';
import { map } from 'rxjs';
import { etagOf } from './if-match';

/** A response body at a configuration revision: it goes out with `ETag: "<revision>"`. */
export class Revisioned<T> {
  constructor(
    readonly revision: number,
    readonly body: T,
  ) {}
}

interface HeaderWriter {
  setHeader(name: string, value: string): void;
}

/**
 * Unwraps `Revisioned` results into their body and the `ETag` header. Bodies that are bare JSON
 * values (a parameter may be a string, a number or null) are sent as JSON text, which Nest would
 * otherwise send as HTML or as nothing.
 */
@Injectable()
export class RevisionedInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(
      map((result: unknown) => {
        if (!(result instanceof Revisioned)) return result;
        const response = context.switchToHttp().getResponse<HeaderWriter>();
        response.setHeader('ETag', etagOf(result.revision));
        const body: unknown = result.body;
        if (body === undefined || (typeof body === 'object' && body !== null)) return body;
        response.setHeader('Content-Type', 'application/json; charset=utf-8');
        return JSON.stringify(body);
      }),
    );
  }
}
