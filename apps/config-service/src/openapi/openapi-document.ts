import type {
  OpenAPIObject,
  ParameterObject,
  PathItemObject,
  ReferenceObject,
  RequestBodyObject,
  ResponseObject,
  SchemaObject,
} from '@nestjs/swagger';
import { ID_COLLECTIONS } from '@policygen/engine';
import { collectionRoute } from '../entities/entity-controllers';
import type { EntityKind } from '../entities/entity-kinds';
import { ENTITY_KINDS } from '../entities/entity-kinds';
import { YAML_MEDIA_TYPES } from '../http/request-bodies';
import { ENTITY_SCHEMA_NAMES, fleetSchemas } from './fleet-schemas';
import { observabilityPaths, observabilitySchemas } from './observability-paths';
import {
  AUTHENTICATION_FAILURES,
  BEARER_SCHEME,
  PUBLIC_PATHS,
  securityPaths,
  securitySchemas,
} from './security-paths';

const ref = (name: string): ReferenceObject => ({ $ref: `#/components/schemas/${name}` });
const arrayOf = (items: SchemaObject | ReferenceObject): SchemaObject => ({ type: 'array', items });
const ANY_JSON: SchemaObject = { description: 'any JSON value' };

const IF_MATCH: ParameterObject = {
  name: 'If-Match',
  in: 'header',
  required: false,
  description: 'The revision the change expects, e.g. "12"; another revision gives 412',
  schema: { type: 'string' },
};
const ETAG = {
  ETag: { description: 'The revision of the configuration, e.g. "12"', schema: { type: 'string' } },
};

function json(schema: SchemaObject | ReferenceObject, description: string): ResponseObject {
  return { description, headers: ETAG, content: { 'application/json': { schema } } };
}
function failure(description: string, schema = 'Error'): ResponseObject {
  return { description, content: { 'application/json': { schema: ref(schema) } } };
}
const body = (schema: SchemaObject | ReferenceObject, description?: string): RequestBodyObject => ({
  required: true,
  ...(description ? { description } : {}),
  content: { 'application/json': { schema } },
});

/** The answers every change can give besides its success. */
const CHANGE_FAILURES: Record<string, ResponseObject> = {
  '400': failure('Invalid: every issue with its JSON path; malformed JSON', 'ValidationError'),
  '412': failure('If-Match names another revision; the body has the current one', 'PreconditionFailed'),
  '413': failure('The body is larger than the configured limit'),
  '415': failure('The body is not JSON'),
};

function pathParameters(names: readonly string[]): ParameterObject[] {
  return names.map((name) => ({
    name,
    in: 'path',
    required: true,
    schema: { type: 'string' },
    ...(name === 'kind' ? { description: '-> or ~> (URL-encoded: -%3E, ~%3E)' } : {}),
  }));
}

function entityPaths(kind: EntityKind): Record<string, PathItemObject> {
  const schema = ref(ENTITY_SCHEMA_NAMES[kind.collection]);
  const collection = `/${collectionRoute(kind)}`;
  const item = `${collection}/${kind.keyFields.map((field) => `{${field}}`).join('/')}`;
  const tags = [kind.collection];
  const mutation = json(
    { type: 'object', properties: { revision: { type: 'integer' }, entity: schema } },
    'Committed: the new revision and the entity with its defaults',
  );
  return {
    [collection]: {
      get: {
        tags,
        summary: `List the ${kind.collection}`,
        responses: { '200': json(arrayOf(schema), 'In key order') },
      },
      post: {
        tags,
        summary: `Create a ${kind.singular}`,
        parameters: [IF_MATCH],
        requestBody: body(schema),
        responses: {
          '201': mutation,
          '409': failure(`The ${kind.singular} exists already`),
          ...CHANGE_FAILURES,
        },
      },
    },
    [item]: {
      parameters: pathParameters(kind.keyFields),
      get: {
        tags,
        summary: `Get a ${kind.singular}`,
        responses: { '200': json(schema, `The ${kind.singular}`), '404': failure('No such entity') },
      },
      put: {
        tags,
        summary: `Replace a ${kind.singular}`,
        description: 'Key fields left out of the body are taken from the URL; differing ones are a 400.',
        parameters: [IF_MATCH],
        requestBody: body(schema),
        responses: { '200': mutation, '404': failure('No such entity'), ...CHANGE_FAILURES },
      },
      delete: {
        tags,
        summary: `Delete a ${kind.singular}`,
        parameters: [IF_MATCH],
        responses: {
          '204': { description: 'Deleted; ETag is the new revision', headers: ETAG },
          '404': failure('No such entity'),
          '409': failure('Still referenced: the issues name what refers to it', 'ValidationError'),
          '412': CHANGE_FAILURES['412'] as ResponseObject,
        },
      },
    },
  };
}

function parameterPaths(): Record<string, PathItemObject> {
  const tags = ['parameters'];
  const mutation = json(ref('ParameterResult'), 'Committed');
  return {
    '/api/v1/parameters': {
      get: {
        tags,
        summary: 'All global parameters',
        responses: { '200': json({ type: 'object', additionalProperties: ANY_JSON }, 'name → value') },
      },
      post: {
        tags,
        summary: 'Create a parameter',
        parameters: [IF_MATCH],
        requestBody: body(ref('NewParameter')),
        responses: { '201': mutation, '409': failure('The parameter exists already'), ...CHANGE_FAILURES },
      },
    },
    '/api/v1/parameters/{name}': {
      parameters: pathParameters(['name']),
      get: {
        tags,
        summary: "A parameter's value",
        responses: { '200': json(ANY_JSON, 'The value'), '404': failure('No such parameter') },
      },
      put: {
        tags,
        summary: "Replace a parameter's value",
        parameters: [IF_MATCH],
        requestBody: body(ANY_JSON, 'The value itself, any JSON'),
        responses: { '200': mutation, '404': failure('No such parameter'), ...CHANGE_FAILURES },
      },
      delete: {
        tags,
        summary: 'Delete a parameter',
        parameters: [IF_MATCH],
        responses: {
          '204': { description: 'Deleted', headers: ETAG },
          '404': failure('No such parameter'),
          '412': CHANGE_FAILURES['412'] as ResponseObject,
        },
      },
    },
  };
}

function wholeConfigurationPaths(): Record<string, PathItemObject> {
  const committed = json(ref('CommitResult'), 'Committed at the new revision');
  const settingsResult = json(
    { type: 'object', properties: { revision: { type: 'integer' }, settings: ref('Settings') } },
    'Committed',
  );
  return {
    '/api/v1/settings': {
      get: {
        tags: ['settings'],
        summary: 'The settings',
        responses: { '200': json(ref('Settings'), 'The settings') },
      },
      put: {
        tags: ['settings'],
        summary: 'Replace the settings (absent fields take their defaults)',
        parameters: [IF_MATCH],
        requestBody: body(ref('Settings')),
        responses: { '200': settingsResult, ...CHANGE_FAILURES },
      },
      patch: {
        tags: ['settings'],
        summary: 'Merge into the settings',
        parameters: [IF_MATCH],
        requestBody: body(ref('Settings')),
        responses: { '200': settingsResult, ...CHANGE_FAILURES },
      },
    },
    '/api/v1/changes': {
      post: {
        tags: ['configuration'],
        summary: 'Commit a change set atomically (fleet-format.md, "Change sets")',
        parameters: [IF_MATCH],
        requestBody: body(ref('ChangeSet')),
        responses: { '200': committed, ...CHANGE_FAILURES },
      },
    },
    '/api/v1/import': {
      post: {
        tags: ['configuration'],
        summary: 'Replace the whole configuration with a fleet file, in one revision',
        parameters: [IF_MATCH],
        requestBody: {
          required: true,
          content: {
            'application/json': { schema: ref('Fleet') },
            ...Object.fromEntries(YAML_MEDIA_TYPES.map((type) => [type, { schema: { type: 'string' } }])),
          },
        },
        responses: { '200': committed, ...CHANGE_FAILURES },
      },
    },
    '/api/v1/export': {
      get: {
        tags: ['configuration'],
        summary: 'The fleet file at the current revision',
        responses: { '200': json(ref('Fleet'), 'The whole configuration') },
      },
    },
    '/api/v1/revision': {
      get: {
        tags: ['configuration'],
        summary: 'The current revision',
        responses: {
          '200': json({ type: 'object', properties: { revision: { type: 'integer' } } }, 'The revision'),
        },
      },
    },
  };
}

function apiSchemas(): Record<string, SchemaObject> {
  const collections = (item: (collection: string) => SchemaObject | ReferenceObject): SchemaObject => ({
    type: 'object',
    additionalProperties: false,
    properties: Object.fromEntries(
      ENTITY_KINDS.map((kind) => [kind.collection, arrayOf(item(kind.collection))]),
    ),
  });
  const entity = (collection: string): ReferenceObject =>
    ref(ENTITY_SCHEMA_NAMES[collection as keyof typeof ENTITY_SCHEMA_NAMES]);
  const deletion = (collection: string): SchemaObject | ReferenceObject =>
    (ID_COLLECTIONS as readonly string[]).includes(collection)
      ? { type: 'string' }
      : collection === 'relationships'
        ? ref('Relationship')
        : {
            type: 'object',
            required: ['id', 'version'],
            properties: { id: { type: 'string' }, version: { type: 'string' } },
          };
  const upsert = collections(entity);
  const remove = collections(deletion);
  return {
    Issue: {
      type: 'object',
      required: ['path', 'message'],
      properties: {
        path: { type: 'string', example: '$.upsert.directives[0].technique' },
        message: { type: 'string' },
      },
    },
    Error: {
      type: 'object',
      required: ['statusCode', 'error', 'message'],
      properties: { statusCode: { type: 'integer' }, error: { type: 'string' }, message: { type: 'string' } },
    },
    ValidationError: {
      allOf: [ref('Error'), { type: 'object', properties: { issues: arrayOf(ref('Issue')) } }],
    },
    PreconditionFailed: {
      allOf: [ref('Error'), { type: 'object', properties: { revision: { type: 'integer' } } }],
    },
    CommitResult: {
      type: 'object',
      properties: { revision: { type: 'integer' }, committedAt: { type: 'string', format: 'date-time' } },
    },
    NewParameter: {
      type: 'object',
      required: ['name', 'value'],
      additionalProperties: false,
      properties: { name: { type: 'string' }, value: ANY_JSON },
    },
    ParameterResult: {
      type: 'object',
      properties: { revision: { type: 'integer' }, name: { type: 'string' }, value: ANY_JSON },
    },
    ChangeSet: {
      type: 'object',
      additionalProperties: false,
      properties: {
        upsert: {
          ...upsert,
          properties: {
            ...upsert.properties,
            parameters: { type: 'object', additionalProperties: ANY_JSON },
            settings: ref('Settings'),
          },
        },
        delete: {
          ...remove,
          properties: { ...remove.properties, parameters: arrayOf({ type: 'string' }) },
        },
      },
    },
    Fleet: {
      ...upsert,
      properties: {
        settings: ref('Settings'),
        parameters: { type: 'object', additionalProperties: ANY_JSON },
        ...upsert.properties,
      },
    },
  };
}

/** The OpenAPI document of the REST API, served at /api/docs (JSON at /api/docs-json). */
export function buildOpenApiDocument(): OpenAPIObject {
  const paths: Record<string, PathItemObject> = {};
  for (const kind of ENTITY_KINDS) Object.assign(paths, entityPaths(kind));
  Object.assign(paths, parameterPaths(), wholeConfigurationPaths(), observabilityPaths(), securityPaths());
  for (const [path, item] of Object.entries(paths))
    for (const method of ['get', 'put', 'post', 'delete', 'patch'] as const) {
      const operation = item[method];
      if (!operation) continue;
      if (PUBLIC_PATHS.includes(path)) operation.security = [];
      else operation.responses = { ...operation.responses, ...AUTHENTICATION_FAILURES };
    }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Policygen config service',
      version: '1',
      description:
        'The fleet configuration (fleet-format.md): every entity, atomic change sets, import and export. ' +
        'Every committed change gets the next revision and goes to policygen.config.changes.v1. ' +
        'Every route but /health/*, /status and /metrics needs an API token: Authorization: Bearer <token>.',
    },
    paths,
    security: [{ [BEARER_SCHEME]: [] }],
    components: {
      securitySchemes: {
        [BEARER_SCHEME]: {
          type: 'http',
          scheme: 'bearer',
          description:
            "An API token (pgt_…) or the environment's POLICYGEN_ADMIN_TOKEN / POLICYGEN_SERVICE_TOKEN",
        },
      },
      schemas: { ...fleetSchemas(), ...apiSchemas(), ...observabilitySchemas(), ...securitySchemas() },
    },
  };
}
