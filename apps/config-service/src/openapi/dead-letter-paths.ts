import type { PathItemObject, ReferenceObject, ResponseObject, SchemaObject } from '@nestjs/swagger';
import {
  DEFAULT_DEAD_LETTERS_PAGE,
  MAX_DEAD_LETTERS_PAGE,
  MAX_REPLAY_OFFSETS,
} from '../dead-letters/dead-letters.controller';

const ref = (name: string): ReferenceObject => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: SchemaObject | ReferenceObject, description: string): ResponseObject => ({
  description,
  content: { 'application/json': { schema } },
});
const error = (description: string): ResponseObject => json(ref('Error'), description);
const integer: SchemaObject = { type: 'integer' };
const text: SchemaObject = { type: 'string' };
const nullable = (schema: SchemaObject | ReferenceObject, description?: string): SchemaObject => ({
  anyOf: [schema, { type: 'null' }],
  ...(description ? { description } : {}),
});
const tags = ['dead letters'];
const TOPIC = {
  name: 'topic',
  in: 'path' as const,
  required: true,
  description: 'The dead-letter topic (`<topic>.dlq`), or the topic whose dead letters they are',
  schema: text,
};
const UNAVAILABLE = error('The message bus does not answer');

/** The dead-letter topics: listing and replay (dead-letters.controller.ts). */
export function deadLetterPaths(): Record<string, PathItemObject> {
  return {
    '/api/v1/dead-letters': {
      get: {
        tags,
        summary: "The deployment's dead-letter topics, with the letters waiting in each (its depth)",
        responses: {
          '200': json(
            {
              type: 'object',
              required: ['topics'],
              properties: { topics: { type: 'array', items: ref('DeadLetterTopic') } },
            },
            'Every dead-letter topic that exists',
          ),
          '503': UNAVAILABLE,
        },
      },
    },
    '/api/v1/dead-letters/{topic}': {
      get: {
        tags,
        summary:
          'The letters of a dead-letter topic, by offset: why each was given up, and whether it was replayed',
        parameters: [
          TOPIC,
          {
            name: 'after',
            in: 'query',
            required: false,
            description: 'Letters after this offset (the next of a page)',
            schema: integer,
          },
          {
            name: 'limit',
            in: 'query',
            required: false,
            description: `Letters per page, 1 to ${MAX_DEAD_LETTERS_PAGE} (default ${DEFAULT_DEAD_LETTERS_PAGE})`,
            schema: integer,
          },
        ],
        responses: {
          '200': json(ref('DeadLetterPage'), 'A page of letters'),
          '400': error('after or limit is not an integer in range (the message names it)'),
          '404': error('The deployment has no such dead-letter topic'),
          '503': UNAVAILABLE,
        },
      },
    },
    '/api/v1/dead-letters/replay': {
      post: {
        tags,
        summary: 'Republish dead letters to the topic they came from (role editor)',
        description:
          'Each letter goes back with its key, value and headers, plus `policygen-replayed-from`; a marker on the ' +
          'dead-letter topic then says it was replayed, so its depth drops and a second replay skips it. Every ' +
          'consumer group of the origin topic reads it again (a duplicate for those that had handled it). Of letters ' +
          'with the same origin (given up by several groups), one is republished.',
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['topic'],
                additionalProperties: false,
                properties: {
                  topic: {
                    ...text,
                    description: 'The dead-letter topic, or the topic whose dead letters they are',
                  },
                  offsets: {
                    type: 'array',
                    items: { type: 'integer', minimum: 0 },
                    minItems: 1,
                    maxItems: MAX_REPLAY_OFFSETS,
                    description: 'The letters to replay (default: every one not replayed yet)',
                  },
                },
              },
            },
          },
        },
        responses: {
          '200': json(ref('ReplayOutcome'), 'What was replayed, and what was skipped and why'),
          '400': error('The body is not a replay request (the issues name the fields)'),
          '404': error('The deployment has no such dead-letter topic'),
          '503': UNAVAILABLE,
        },
      },
    },
  };
}

export function deadLetterSchemas(): Record<string, SchemaObject> {
  return {
    DeadLetterTopic: {
      type: 'object',
      required: ['topic', 'origin', 'depth', 'total'],
      properties: {
        topic: text,
        origin: { ...text, description: 'Where its letters came from, and where a replay sends them' },
        depth: { ...integer, description: 'Letters not replayed yet (the metric policygen_dlq_depth)' },
        total: integer,
      },
    },
    DeadLetter: {
      type: 'object',
      required: [
        'topic',
        'partition',
        'offset',
        'origin',
        'key',
        'error',
        'attempts',
        'failedAt',
        'group',
        'headers',
        'size',
        'value',
        'replayed',
      ],
      properties: {
        topic: text,
        partition: integer,
        offset: integer,
        origin: nullable(
          {
            type: 'object',
            properties: {
              topic: text,
              partition: integer,
              offset: { ...text, description: 'A 64-bit offset' },
            },
          },
          'Where the message was read (header policygen-origin)',
        ),
        key: nullable(text),
        error: { ...text, description: "The handler's last error, or why the message could not be read" },
        attempts: nullable(integer, 'Handler calls that included it and failed'),
        failedAt: nullable({ type: 'string', format: 'date-time' }),
        group: nullable(text, 'The consumer group that gave it up'),
        headers: { type: 'object', additionalProperties: text, description: "The message's own headers" },
        size: { ...integer, description: "The value's size in bytes" },
        value: nullable(
          {
            type: 'object',
            required: ['encoding', 'data', 'truncated'],
            properties: {
              encoding: { type: 'string', enum: ['utf8', 'base64'] },
              data: text,
              truncated: { type: 'boolean' },
            },
          },
          'The value (its first 4 KiB), null for a tombstone',
        ),
        replayed: nullable({
          type: 'object',
          properties: { at: { type: 'string', format: 'date-time' }, by: nullable(text) },
        }),
      },
    },
    DeadLetterPage: {
      type: 'object',
      required: ['topic', 'depth', 'total', 'items', 'next'],
      properties: {
        topic: text,
        depth: integer,
        total: integer,
        items: { type: 'array', items: ref('DeadLetter') },
        next: nullable(integer, 'The after of the next page; null when this one is the last'),
      },
    },
    ReplayOutcome: {
      type: 'object',
      required: ['topic', 'replayed', 'skipped'],
      properties: {
        topic: text,
        replayed: { type: 'array', items: { type: 'object', properties: { offset: integer, to: text } } },
        skipped: { type: 'array', items: { type: 'object', properties: { offset: integer, reason: text } } },
      },
    },
  };
}
