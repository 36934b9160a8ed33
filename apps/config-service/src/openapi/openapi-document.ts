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
import { DEFAULT_PREVIEW_LIMITS } from '../changes/change-preview';
import { collectionRoute } from '../entities/entity-controllers';
import type { EntityKind } from '../entities/entity-kinds';
import { ENTITY_KINDS } from '../entities/entity-kinds';
import { MAX_REASON_CHARACTERS, REASON_HEADER } from '../http/reason';
import { YAML_MEDIA_TYPES } from '../http/request-bodies';
import { DEFAULT_REVISIONS_PAGE, MAX_REVISIONS_PAGE } from '../revisions/revisions.service';
import { ENTITY_SCHEMA_NAMES, fleetSchemas } from './fleet-schemas';
import { deadLetterPaths, deadLetterSchemas } from './dead-letter-paths';
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
const nullable = (schema: SchemaObject, description?: string): SchemaObject => ({
  anyOf: [schema, { type: 'null' }],
  ...(description ? { description } : {}),
});

const IF_MATCH: ParameterObject = {
  name: 'If-Match',
  in: 'header',
  required: false,
  description:
    'The configuration\'s revision the change expects, e.g. "12" (the ETag of GET /api/v1/revision or of a list); another revision gives 412',
  schema: { type: 'string' },
};
const ENTITY_IF_MATCH: ParameterObject = {
  ...IF_MATCH,
  description:
    'The entity\'s own revision the change expects (its ETag), e.g. "12": a 412 only when this entity changed since, or no longer exists',
};
const REASON: ParameterObject = {
  name: REASON_HEADER,
  in: 'header',
  required: false,
  description:
    `Why the change is made, recorded with its revision (GET /api/v1/revisions): at most ${MAX_REASON_CHARACTERS} characters, ` +
    "no control characters (else 400). Non-ASCII text as RFC 8187: UTF-8''<percent-encoded>",
  schema: { type: 'string' },
};
/** The headers of a write: its precondition on the configuration, and its reason. */
const WRITE_HEADERS = [IF_MATCH, REASON];
/** The headers of a write to one entity: its precondition on that entity, and its reason. */
const ENTITY_WRITE_HEADERS = [ENTITY_IF_MATCH, REASON];
const ETAG = {
  ETag: { description: 'The revision of the configuration, e.g. "12"', schema: { type: 'string' } },
};
const ENTITY_ETAG = {
  ETag: {
    description: 'The revision that last wrote this entity, e.g. "12": the If-Match of its PUT and DELETE',
    schema: { type: 'string' },
  },
};

function json(
  schema: SchemaObject | ReferenceObject,
  description: string,
  headers: ResponseObject['headers'] = ETAG,
): ResponseObject {
  return { description, headers, content: { 'application/json': { schema } } };
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
  '412': failure(
    'If-Match names another revision (of the configuration, or of the entity); the body has the current one',
    'PreconditionFailed',
  ),
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
        parameters: WRITE_HEADERS,
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
        responses: {
          '200': json(schema, `The ${kind.singular}`, ENTITY_ETAG),
          '404': failure('No such entity'),
        },
      },
      put: {
        tags,
        summary: `Replace a ${kind.singular}`,
        description: 'Key fields left out of the body are taken from the URL; differing ones are a 400.',
        parameters: ENTITY_WRITE_HEADERS,
        requestBody: body(schema),
        responses: { '200': mutation, '404': failure('No such entity'), ...CHANGE_FAILURES },
      },
      delete: {
        tags,
        summary: `Delete a ${kind.singular}`,
        parameters: ENTITY_WRITE_HEADERS,
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
        parameters: WRITE_HEADERS,
        requestBody: body(ref('NewParameter')),
        responses: { '201': mutation, '409': failure('The parameter exists already'), ...CHANGE_FAILURES },
      },
    },
    '/api/v1/parameters/{name}': {
      parameters: pathParameters(['name']),
      get: {
        tags,
        summary: "A parameter's value",
        responses: {
          '200': json(ANY_JSON, 'The value', ENTITY_ETAG),
          '404': failure('No such parameter'),
        },
      },
      put: {
        tags,
        summary: "Replace a parameter's value",
        parameters: ENTITY_WRITE_HEADERS,
        requestBody: body(ANY_JSON, 'The value itself, any JSON'),
        responses: { '200': mutation, '404': failure('No such parameter'), ...CHANGE_FAILURES },
      },
      delete: {
        tags,
        summary: 'Delete a parameter',
        parameters: ENTITY_WRITE_HEADERS,
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
        responses: {
          '200': json(
            ref('Settings'),
            'The settings; ETag: the revision that last wrote them ("0": never)',
            ENTITY_ETAG,
          ),
        },
      },
      put: {
        tags: ['settings'],
        summary: 'Replace the settings (absent fields take their defaults)',
        parameters: ENTITY_WRITE_HEADERS,
        requestBody: body(ref('Settings')),
        responses: { '200': settingsResult, ...CHANGE_FAILURES },
      },
      patch: {
        tags: ['settings'],
        summary: 'Merge into the settings',
        parameters: ENTITY_WRITE_HEADERS,
        requestBody: body(ref('Settings')),
        responses: { '200': settingsResult, ...CHANGE_FAILURES },
      },
    },
    '/api/v1/changes': {
      post: {
        tags: ['configuration'],
        summary: 'Commit a change set atomically (fleet-format.md, "Change sets"), or preview it (dryRun)',
        parameters: [
          ...WRITE_HEADERS,
          {
            name: 'dryRun',
            in: 'query',
            required: false,
            description:
              'true: commit nothing, announce nothing; answer what the commit would do (ChangePreview): the nodes it ' +
              'affects, those that would fail and why, and bundle diffs of the first changed nodes. Refused as the ' +
              'commit would be (400, 412). ETag: the revision previewed against.',
            schema: { type: 'boolean', default: false },
          },
        ],
        requestBody: body(
          ref('ChangeRequest'),
          `A change set; its reason may be given as a "reason" field beside upsert and delete (or as ${REASON_HEADER}, not both)`,
        ),
        responses: {
          '200': json(
            { oneOf: [ref('CommitResult'), ref('ChangePreview')] },
            'Committed at the new revision; with dryRun, the preview',
          ),
          ...CHANGE_FAILURES,
        },
      },
    },
    '/api/v1/import': {
      post: {
        tags: ['configuration'],
        summary: 'Replace the whole configuration with a fleet file, in one revision',
        parameters: WRITE_HEADERS,
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
        parameters: [
          {
            name: 'view',
            in: 'query',
            required: false,
            description:
              "`placement`: only each node's and relay's policy server (the relay tree, what the distribution reads); absent: the whole fleet",
            schema: { type: 'string', enum: ['placement'] },
          },
        ],
        responses: {
          '200': json(
            { oneOf: [ref('Fleet'), ref('FleetPlacement')] },
            'The whole configuration, or its placement with ?view=placement',
          ),
          '400': failure('view is not placement'),
        },
      },
    },
    '/api/v1/revisions': {
      get: {
        tags: ['audit trail'],
        summary: 'The revisions, oldest first: who committed each, when, why, and how much it changed',
        description:
          'Pages follow each other by `after`: pass the `next` of a page to get the one after it (null after the last). ' +
          'The newest revisions: after = the current revision minus limit.',
        parameters: [
          {
            name: 'after',
            in: 'query',
            required: false,
            description: 'Revisions after this one (default 0: from the first)',
            schema: { type: 'integer', minimum: 0, default: 0 },
          },
          {
            name: 'limit',
            in: 'query',
            required: false,
            schema: {
              type: 'integer',
              minimum: 1,
              maximum: MAX_REVISIONS_PAGE,
              default: DEFAULT_REVISIONS_PAGE,
            },
          },
        ],
        responses: {
          '200': {
            description: 'A page of revisions',
            content: { 'application/json': { schema: ref('RevisionsPage') } },
          },
          '400': failure(
            'after or limit is not an integer in range (the message names it)',
            'ValidationError',
          ),
        },
      },
    },
    '/api/v1/revisions/{revision}': {
      parameters: [{ name: 'revision', in: 'path', required: true, schema: { type: 'integer', minimum: 1 } }],
      get: {
        tags: ['audit trail'],
        summary: 'One revision with what it changed: entities by kind and key, and its change set',
        responses: {
          '200': {
            description: 'The revision',
            content: { 'application/json': { schema: ref('RevisionDetail') } },
          },
          '400': failure('Not a revision number', 'ValidationError'),
          '404': failure('No such revision'),
        },
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
  const changeSet: SchemaObject = {
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
  };
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
    ChangeSet: changeSet,
    ChangeRequest: {
      description: 'A change set, and why it is made',
      type: 'object',
      additionalProperties: false,
      properties: {
        ...(changeSet.properties ?? {}),
        reason: { type: 'string', maxLength: MAX_REASON_CHARACTERS },
      },
    },
    ...revisionSchemas(),
    ...previewSchemas(),
    FleetPlacement: {
      description: 'Where each node and relay is served from: its policy server, root or a relay',
      type: 'object',
      additionalProperties: false,
      required: ['nodes', 'relays'],
      properties: {
        nodes: { type: 'array', items: ref('Placement') },
        relays: { type: 'array', items: ref('Placement') },
      },
    },
    Placement: {
      type: 'object',
      additionalProperties: false,
      required: ['id', 'policyServer'],
      properties: { id: { type: 'string', minLength: 1 }, policyServer: { type: 'string', minLength: 1 } },
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

/** The answer of a dry run (changes/change-preview.ts). */
function previewSchemas(): Record<string, SchemaObject> {
  const limits = DEFAULT_PREVIEW_LIMITS;
  const texts = arrayOf({ type: 'string' });
  const status: SchemaObject = { type: 'string', enum: ['ok', 'failed', 'ignored', 'absent'] };
  return {
    ChangePreview: {
      type: 'object',
      required: [
        'dryRun',
        'revision',
        'counts',
        'affected',
        'removed',
        'checked',
        'changed',
        'failing',
        'nodes',
      ],
      properties: {
        dryRun: { type: 'boolean', enum: [true] },
        revision: { type: 'integer', description: 'The revision the change set was checked against' },
        counts: ref('ChangeCounts'),
        affected: {
          type: 'object',
          description: `Nodes whose bundle the change can affect: their count, and the first ${limits.listedNodes} ids`,
          properties: { count: { type: 'integer' }, nodes: texts },
        },
        removed: { ...texts, description: 'Nodes the change deletes' },
        checked: {
          type: 'object',
          description: `Affected nodes generated before and after (the first ${limits.checkedNodes} by id), and how many were left out`,
          properties: { count: { type: 'integer' }, leftOut: { type: 'integer' } },
        },
        changed: {
          type: 'integer',
          description: 'Checked nodes whose files (but the manifest), status or errors would change',
        },
        failing: arrayOf({
          type: 'object',
          properties: {
            node: { type: 'string' },
            before: status,
            errors: arrayOf({ type: 'object', description: 'NodeError (outputs.md)' }),
          },
        }),
        nodes: arrayOf(ref('NodeBundleDiff')),
        diffsLeftOut: {
          type: 'integer',
          description: `Changed nodes not compared file by file (the first ${limits.diffedNodes} are)`,
        },
      },
    },
    NodeBundleDiff: {
      type: 'object',
      properties: {
        node: { type: 'string' },
        status: { type: 'object', properties: { before: status, after: status } },
        files: {
          type: 'object',
          description: 'Bundle paths',
          properties: { added: texts, removed: texts, changed: texts },
        },
        diffs: {
          type: 'object',
          description:
            'Unified diffs of changed and added files, by path: promises.cf and properties.json first',
          additionalProperties: { type: 'string' },
        },
        undiffed: {
          ...texts,
          description: `Files without a diff: over the node's budget (${limits.diffCharactersPerNode} characters), or too different`,
        },
      },
    },
  };
}

/** The audit trail's answers. */
function revisionSchemas(): Record<string, SchemaObject> {
  const changeKinds = [...ENTITY_KINDS.map((kind) => kind.collection), 'parameters', 'settings'];
  const byKind = (item: SchemaObject): SchemaObject => ({
    type: 'object',
    description: 'Only the kinds the revision touched',
    additionalProperties: false,
    properties: Object.fromEntries(changeKinds.map((kind) => [kind, item])),
  });
  return {
    ChangeCounts: byKind({
      type: 'object',
      properties: { upserted: { type: 'integer' }, deleted: { type: 'integer' } },
    }),
    Revision: {
      type: 'object',
      required: ['revision', 'committedAt', 'author', 'reason', 'counts'],
      properties: {
        revision: { type: 'integer' },
        committedAt: { type: 'string', format: 'date-time' },
        author: nullable(
          { type: 'string' },
          "The API token's name, or anonymous; null for revisions committed before authors were recorded",
        ),
        reason: nullable({ type: 'string' }),
        counts: ref('ChangeCounts'),
      },
    },
    RevisionsPage: {
      type: 'object',
      required: ['revisions', 'next'],
      properties: {
        revisions: arrayOf(ref('Revision')),
        next: nullable({ type: 'integer' }, 'The after of the next page; null when this one is the last'),
      },
    },
    RevisionDetail: {
      allOf: [
        ref('Revision'),
        {
          type: 'object',
          properties: {
            changes: byKind({
              type: 'object',
              description:
                'Keys: ids; techniques id@version; relationships "from kind to"; parameters by name; settings by the names set',
              properties: { upserted: arrayOf({ type: 'string' }), deleted: arrayOf({ type: 'string' }) },
            }),
            changeSet: ref('ChangeSet'),
          },
        },
      ],
    },
  };
}

/** The OpenAPI document of the REST API, served at /api/docs (JSON at /api/docs-json). */
export function buildOpenApiDocument(): OpenAPIObject {
  const paths: Record<string, PathItemObject> = {};
  for (const kind of ENTITY_KINDS) Object.assign(paths, entityPaths(kind));
  Object.assign(
    paths,
    parameterPaths(),
    wholeConfigurationPaths(),
    observabilityPaths(),
    securityPaths(),
    deadLetterPaths(),
  );
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
      schemas: {
        ...fleetSchemas(),
        ...apiSchemas(),
        ...observabilitySchemas(),
        ...securitySchemas(),
        ...deadLetterSchemas(),
      },
    },
  };
}
