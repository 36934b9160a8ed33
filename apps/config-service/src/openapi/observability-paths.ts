import type { PathItemObject, ReferenceObject, ResponseObject, SchemaObject } from '@nestjs/swagger';

const ref = (name: string): ReferenceObject => ({ $ref: `#/components/schemas/${name}` });
const arrayOf = (items: SchemaObject | ReferenceObject): SchemaObject => ({ type: 'array', items });
const json = (schema: SchemaObject | ReferenceObject, description: string): ResponseObject => ({
  description,
  content: { 'application/json': { schema } },
});
const error = (description: string): ResponseObject => json(ref('Error'), description);
const integer: SchemaObject = { type: 'integer' };
const text: SchemaObject = { type: 'string' };
const time: SchemaObject = { type: 'string', format: 'date-time' };
const nullable = (schema: SchemaObject | ReferenceObject): SchemaObject => ({
  anyOf: [schema, { type: 'null' }],
});
const milliseconds: SchemaObject = { ...nullable(integer), description: 'milliseconds from the commit' };

function query(name: string, description: string, schema: SchemaObject = text) {
  return { name, in: 'query' as const, required: false, description, schema };
}
function path(name: string, schema: SchemaObject = text) {
  return { name, in: 'path' as const, required: true, schema };
}

/** Health, metrics, node tokens, and where the pipeline stands (pipeline.controller.ts). */
export function observabilityPaths(): Record<string, PathItemObject> {
  return {
    '/health/live': {
      get: {
        tags: ['health'],
        summary: 'Liveness: 200 while the process works',
        responses: { '200': json({ type: 'object', properties: { status: text, service: text } }, 'Alive') },
      },
    },
    '/health/ready': {
      get: {
        tags: ['health'],
        summary: 'Readiness: 503 while starting, catching up, or cut off from Postgres or Kafka',
        description:
          'Each check with its reason (`@nestjs/terminus` shape). In `policygen start`, it covers every service of the process.',
        responses: {
          '200': json(ref('Readiness'), 'Ready (a degraded check, e.g. failing nodes, says so)'),
          '503': json(ref('Readiness'), 'Not ready: the failing checks are under `error`, with their reason'),
        },
      },
    },
    '/status': {
      get: {
        tags: ['health'],
        summary: "The service's own state (its revision)",
        responses: { '200': json({ type: 'object', properties: { revision: integer } }, 'State') },
      },
    },
    '/metrics': {
      get: {
        tags: ['health'],
        summary: 'Prometheus metrics (text exposition format)',
        responses: { '200': { description: 'Metrics', content: { 'text/plain': { schema: text } } } },
      },
    },
    '/api/v1/nodes/{id}/token': {
      post: {
        tags: ['nodes'],
        summary: "A node's token for its relay (Authorization: Bearer <token>), valid for a number of days",
        description:
          'Each call issues a new token; those issued before stay valid until they expire. Rotating the token secret revokes them all.',
        parameters: [path('id')],
        requestBody: {
          required: false,
          content: {
            'application/json': {
              schema: {
                type: 'object',
                additionalProperties: false,
                properties: {
                  expiresInDays: { type: 'integer', minimum: 1, maximum: 366, default: 90 },
                },
              },
            },
          },
        },
        responses: {
          '200': json(
            { type: 'object', properties: { nodeId: text, token: text, expiresAt: time } },
            'The token, and when it expires',
          ),
          '400': error('expiresInDays is not an integer from 1 to 366 (the issue names the field)'),
          '404': error('No such node'),
          '503': error('No token secret is configured'),
        },
      },
    },
    '/api/v1/relays/{id}/token': {
      post: {
        tags: ['relays'],
        summary:
          "A relay's credential for its parent (POLICYGEN_RELAY_TOKEN): admin tokens only; `root` is the root server's relay",
        description:
          'Derived from the relay id and the token secret: the same one each time; rotating the secret revokes them all.',
        parameters: [path('id')],
        responses: {
          '200': json({ type: 'object', properties: { relayId: text, token: text } }, 'The credential'),
          '403': error('The API token is not an admin token'),
          '404': error('No such relay'),
          '503': error('No token secret is configured'),
        },
      },
    },
    '/api/v1/nodes/{id}/status': {
      get: {
        tags: ['pipeline'],
        summary: "A node's way through the pipeline: generated, on each relay, its failure",
        parameters: [path('id')],
        responses: { '200': json(ref('NodeStatus'), 'The node'), '404': error('No such node') },
      },
    },
    '/api/v1/nodes/{id}/explain': {
      get: {
        tags: ['pipeline'],
        summary:
          'Why the node gets its policies in this order: drafts, merged values, relationships, sources',
        parameters: [path('id')],
        responses: {
          '200': json(
            { type: 'object', additionalProperties: true },
            'The explanation (as `policygen explain --json`)',
          ),
          '404': error('No such node'),
        },
      },
    },
    '/api/v1/failures': {
      get: {
        tags: ['pipeline'],
        summary: 'The nodes that fail to generate (each keeps its last good bundle), by node id',
        parameters: [
          query('code', 'only this error code, e.g. MISSING_DEPENDENCY'),
          query('directive', 'only failures naming this directive'),
          query('rule', 'only failures naming this rule'),
          query('after', 'the `next` of the previous page'),
          query('limit', '1 to 1000 (default 50)', integer),
        ],
        responses: {
          '200': json(
            {
              type: 'object',
              properties: { total: integer, items: arrayOf(ref('NodeFailure')), next: nullable(text) },
            },
            'A page of failures',
          ),
          '400': error('A parameter is out of range (named in the message)'),
        },
      },
    },
    '/api/v1/revisions/{revision}/progress': {
      get: {
        tags: ['pipeline'],
        summary: 'How far a revision got: nodes generated, unchanged, failed, and delivered per relay',
        parameters: [path('revision', integer)],
        responses: {
          '200': json(ref('RevisionProgress'), 'The progress'),
          '400': error('Not a revision number'),
          '404': error('No node was generated at this revision (or it is too old to be kept)'),
        },
      },
    },
    '/api/v1/pipeline/status': {
      get: {
        tags: ['pipeline'],
        summary: 'Revisions per stage, failing nodes, throughput, relays, consumer lag, generators',
        responses: { '200': json(ref('PipelineStatus'), 'The pipeline') },
      },
    },
    '/api/v1/pipeline/lag': {
      get: {
        tags: ['pipeline'],
        summary: "Each stage's lag from the commit over a window (p50/p95/p99/max), a catch-up's apart",
        parameters: [query('window', 'seconds, 1 to 600 (default 60)', integer)],
        responses: { '200': json(ref('LagReport'), 'The lag'), '400': error('The window is out of range') },
      },
    },
    '/api/v1/pipeline/stream': {
      get: {
        tags: ['pipeline'],
        summary: 'Server-sent events: a `snapshot` each second, `{at, status, lag}`',
        parameters: [query('window', 'the lag window in seconds (default 60)', integer)],
        responses: {
          '200': {
            description: '`event: snapshot` then `data: {"at", "status": PipelineStatus, "lag": LagReport}`',
            content: { 'text/event-stream': { schema: text } },
          },
        },
      },
    },
  };
}

export function observabilitySchemas(): Record<string, SchemaObject> {
  const stage: SchemaObject = { type: 'string', enum: ['generated', 'distributed', 'relay', 'fetched'] };
  return {
    Readiness: {
      type: 'object',
      properties: {
        status: { type: 'string', enum: ['ok', 'error'] },
        degraded: { type: 'boolean' },
        info: { type: 'object', additionalProperties: true },
        error: { type: 'object', additionalProperties: true },
        details: { type: 'object', additionalProperties: true },
      },
    },
    NodeFailure: {
      type: 'object',
      required: ['nodeId', 'code', 'message', 'directiveIds', 'ruleIds', 'sinceRevision', 'since'],
      properties: {
        nodeId: text,
        code: { ...text, example: 'MISSING_DEPENDENCY' },
        message: text,
        directiveIds: arrayOf(text),
        ruleIds: arrayOf(text),
        sinceRevision: integer,
        since: time,
        lastGoodRevision: nullable(integer),
      },
    },
    NodeStatus: {
      type: 'object',
      properties: {
        nodeId: text,
        revision: { ...integer, description: "the configuration's revision now" },
        generation: nullable({
          type: 'object',
          properties: {
            revision: integer,
            outcome: { type: 'string', enum: ['generated', 'unchanged', 'failed'] },
            hash: nullable(text),
            at: time,
            lastGoodRevision: nullable(integer),
          },
        }),
        failure: nullable(ref('NodeFailure')),
        relays: arrayOf({
          type: 'object',
          properties: {
            relayId: text,
            revision: nullable(integer),
            hash: nullable(text),
            confirmedAt: nullable(time),
            current: { type: 'boolean' },
          },
        }),
        fetched: nullable({
          type: 'object',
          properties: {
            relayId: text,
            revision: integer,
            hash: text,
            fetchedAt: time,
            current: { type: 'boolean' },
          },
        }),
      },
    },
    RevisionProgress: {
      type: 'object',
      properties: {
        revision: integer,
        generated: integer,
        unchanged: integer,
        failed: integer,
        relays: arrayOf({ type: 'object', properties: { relayId: text, delivered: integer } }),
      },
    },
    StageLag: {
      type: 'object',
      properties: {
        stage,
        count: integer,
        p50: milliseconds,
        p95: milliseconds,
        p99: milliseconds,
        max: milliseconds,
      },
    },
    LagReport: {
      type: 'object',
      properties: {
        windowSeconds: integer,
        steady: arrayOf(ref('StageLag')),
        catchUp: arrayOf(ref('StageLag')),
      },
    },
    PipelineStatus: {
      type: 'object',
      properties: {
        revisions: {
          type: 'object',
          properties: { committed: integer, generated: integer, distributed: integer },
        },
        failingNodes: integer,
        failuresByCode: { type: 'object', additionalProperties: integer },
        throughput: {
          type: 'object',
          properties: {
            changesPerSecond: { type: 'number' },
            nodesGeneratedPerSecond: { type: 'number' },
            bundlesDeliveredPerSecond: { type: 'number' },
          },
        },
        relays: arrayOf({
          type: 'object',
          properties: {
            relayId: text,
            parentId: nullable(text),
            revision: integer,
            behind: integer,
            confirmedAt: nullable(time),
            nodes: integer,
          },
        }),
        consumers: arrayOf({
          type: 'object',
          properties: {
            group: text,
            topic: text,
            lag: integer,
            partitions: arrayOf({ type: 'object', properties: { partition: integer, lag: integer } }),
          },
        }),
        generators: arrayOf({
          type: 'object',
          properties: { memberId: text, clientId: text, partitions: arrayOf(integer) },
        }),
        ready: { type: 'boolean' },
        reasons: arrayOf(text),
      },
    },
  };
}
