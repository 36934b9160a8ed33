import type { NestExpressApplication } from '@nestjs/platform-express';

export const JSON_MEDIA_TYPES = ['application/json', 'application/*+json'];
export const YAML_MEDIA_TYPES = ['application/yaml', 'application/x-yaml', 'text/yaml'];

/** The parts of Express's request and response these middlewares use. */
interface Request {
  readonly method: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body?: unknown;
}
interface Response {
  status(code: number): Response;
  json(body: unknown): void;
}
type Next = (error?: unknown) => void;

/** What body-parser rejects a body with. */
interface BodyParserError {
  readonly status?: number;
  readonly type?: string;
  readonly message?: string;
  readonly length?: number;
}

/**
 * Request bodies: JSON (any JSON value: a parameter may be a bare string) and YAML text for
 * imports, both up to `limitBytes`. Whatever cannot be read is answered here with a 4xx that says
 * why, before any handler runs.
 */
/** Actions that may take no body (issuing a node's token, a relay's credential). */
const BODILESS_ACTIONS = [/^\/api\/v1\/nodes\/[^/]+\/token$/, /^\/api\/v1\/relays\/[^/]+\/token$/];

export function installRequestBodies(app: NestExpressApplication, limitBytes: number): void {
  app.useBodyParser('json', { limit: limitBytes, strict: false, type: JSON_MEDIA_TYPES });
  app.useBodyParser('text', { limit: limitBytes, type: YAML_MEDIA_TYPES });
  app.use((error: unknown, _request: Request, response: Response, next: Next) => {
    const refusal =
      typeof error === 'object' && error !== null
        ? bodyRefusal(error as BodyParserError, limitBytes)
        : undefined;
    if (!refusal) return next(error);
    response.status(refusal.statusCode).json(refusal);
  });
  app.use((request: Request, response: Response, next: Next) => {
    if (!['POST', 'PUT', 'PATCH'].includes(request.method) || request.body !== undefined) return next();
    if (BODILESS_ACTIONS.some((route) => route.test(request.path)) && !hasBody(request)) return next();
    const refusal = hasBody(request)
      ? {
          statusCode: 415,
          error: 'Unsupported Media Type',
          message: `send the body as JSON (Content-Type: application/json), or a fleet file as YAML (${YAML_MEDIA_TYPES.join(', ')})`,
        }
      : { statusCode: 400, error: 'Bad Request', message: 'this request needs a JSON body' };
    response.status(refusal.statusCode).json(refusal);
  });
}

function bodyRefusal(
  error: BodyParserError,
  limitBytes: number,
): { statusCode: number; error: string; message: string } | undefined {
  switch (error.type) {
    case 'entity.too.large':
      return {
        statusCode: 413,
        error: 'Payload Too Large',
        message: `the request body${error.length === undefined ? '' : ` (${error.length} bytes)`} is larger than the limit of ${limitBytes} bytes`,
      };
    case 'entity.parse.failed':
      return {
        statusCode: 400,
        error: 'Bad Request',
        message: `the request body is not valid JSON: ${error.message ?? 'unreadable'}`,
      };
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return {
        statusCode: 415,
        error: 'Unsupported Media Type',
        message: error.message ?? 'unsupported encoding',
      };
    default:
      if (error.status !== undefined && error.status >= 400 && error.status < 500)
        return {
          statusCode: error.status,
          error: 'Bad Request',
          message: error.message ?? 'unreadable body',
        };
      return undefined;
  }
}

function hasBody(request: Request): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}
