import { ExpressAdapter } from '@nestjs/platform-express';
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
 * Nest's Express adapter, answering a `Revisioned` result with its body and the `ETag` header.
 * Bodies that are bare JSON values (a parameter may be a string, a number or null) are sent as JSON
 * text, which Nest would otherwise send as HTML or as nothing. Done where the reply is written, not
 * in an interceptor: a route with any interceptor runs through Nest's RxJS chain and an
 * `AsyncResource.bind` per interceptor on every request, which a commit of the config API paid.
 */
export class RevisionedExpressAdapter extends ExpressAdapter {
  override reply(response: unknown, body: unknown, statusCode?: number): unknown {
    if (!(body instanceof Revisioned)) return super.reply(response, body, statusCode);
    const writer = response as HeaderWriter;
    writer.setHeader('ETag', etagOf(body.revision));
    const inner: unknown = body.body;
    if (inner === undefined || (typeof inner === 'object' && inner !== null))
      return super.reply(response, inner, statusCode);
    writer.setHeader('Content-Type', 'application/json; charset=utf-8');
    return super.reply(response, JSON.stringify(inner), statusCode);
  }
}
