import type { PathItemObject, ReferenceObject, ResponseObject, SchemaObject } from '@nestjs/swagger';

const ref = (name: string): ReferenceObject => ({ $ref: `#/components/schemas/${name}` });
const error = (description: string, schema = 'Error'): ResponseObject => ({
  description,
  content: { 'application/json': { schema: ref(schema) } },
});
const ok = (schema: SchemaObject | ReferenceObject, description: string): ResponseObject => ({
  description,
  content: { 'application/json': { schema } },
});

const nullableDateTime: SchemaObject = { anyOf: [{ type: 'string', format: 'date-time' }, { type: 'null' }] };

/** The routes anyone may call (README, "Authentication"); every other one needs a bearer token. */
export const PUBLIC_PATHS: readonly string[] = ['/health/live', '/health/ready', '/status', '/metrics'];

export const BEARER_SCHEME = 'bearer';

/** What every authenticated operation may answer besides its own responses. */
export const AUTHENTICATION_FAILURES: Record<string, ResponseObject> = {
  '401': error('No credential, or one that is unknown, revoked or expired (WWW-Authenticate: Bearer)'),
  '403': error("The credential's role does not allow this: reader < editor < admin"),
};

export function securityPaths(): Record<string, PathItemObject> {
  const tags = ['authentication'];
  const admin = 'Admin role.';
  return {
    '/api/v1/api-tokens': {
      get: {
        tags,
        summary: 'Every API token (never its secret), with its state: active, expired or revoked',
        description: admin,
        responses: { '200': ok({ type: 'array', items: ref('ApiToken') }, 'Oldest first') },
      },
      post: {
        tags,
        summary: 'Create an API token: the answer holds its secret, shown this once',
        description: `${admin} Without expiresAt or expiresInDays it expires in 90 days; "expiresAt": null for none.`,
        requestBody: { required: true, content: { 'application/json': { schema: ref('NewApiToken') } } },
        responses: {
          '201': ok(ref('CreatedApiToken'), 'Created'),
          '400': error('Invalid: each issue with its JSON path', 'ValidationError'),
          '409': error('A token in force has that name'),
        },
      },
    },
    '/api/v1/api-tokens/{id}': {
      parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
      get: {
        tags,
        summary: 'One API token',
        description: admin,
        responses: { '200': ok(ref('ApiToken'), 'The token'), '404': error('No such token') },
      },
      delete: {
        tags,
        summary: 'Revoke an API token: refused from then on (again: nothing changes)',
        description: admin,
        responses: { '200': ok(ref('ApiToken'), 'Revoked'), '404': error('No such token') },
      },
    },
    '/api/v1/whoami': {
      get: {
        tags,
        summary: "The caller's token name and role",
        responses: {
          '200': ok(
            { type: 'object', properties: { name: { type: 'string' }, role: ref('Role') } },
            'Who the API takes the caller for',
          ),
        },
      },
    },
  };
}

export function securitySchemas(): Record<string, SchemaObject> {
  const token: Record<string, SchemaObject | ReferenceObject> = {
    id: { type: 'string', pattern: '^[0-9a-f]{16}$' },
    name: { type: 'string' },
    role: ref('Role'),
    createdAt: { type: 'string', format: 'date-time' },
    createdBy: { type: 'string', description: 'The name of the token that created it' },
    expiresAt: nullableDateTime,
    revokedAt: nullableDateTime,
    state: { type: 'string', enum: ['active', 'expired', 'revoked'] },
  };
  return {
    Role: {
      type: 'string',
      enum: ['reader', 'editor', 'admin'],
      description:
        'reader: GET; editor: also changes the configuration; admin: also tokens, node tokens, relays',
    },
    ApiToken: { type: 'object', properties: token },
    CreatedApiToken: {
      type: 'object',
      properties: {
        ...token,
        token: { type: 'string', description: 'pgt_<id>_<secret>: send it as Authorization: Bearer <token>' },
      },
    },
    NewApiToken: {
      type: 'object',
      required: ['name', 'role'],
      additionalProperties: false,
      properties: {
        name: { type: 'string', maxLength: 128, pattern: '^[A-Za-z0-9][A-Za-z0-9._@:-]*$' },
        role: ref('Role'),
        expiresInDays: { type: 'integer', minimum: 1, maximum: 3660 },
        expiresAt: nullableDateTime,
      },
    },
  };
}
