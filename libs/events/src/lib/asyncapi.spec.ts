import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Parser } from '@asyncapi/parser';
import { asyncApiDocument } from './asyncapi';
import { EVENT_EXAMPLES } from './examples';
import { breakingChanges } from './schema-evolution';
import { jsonSchemaOf, parseEvent } from '@policygen/sdk/contract';
import type { Topic } from '@policygen/sdk/contract';
import { TOPICS } from '@policygen/sdk/contract';

const LIB = join(__dirname, '..', '..');
const VERSION = (
  JSON.parse(readFileSync(join(LIB, '..', '..', 'package.json'), 'utf8')) as { version: string }
).version;
const topics = Object.values(TOPICS) as Topic[];

describe('the AsyncAPI document of the events', () => {
  const document = asyncApiDocument(VERSION);

  it('is the one written to libs/events/asyncapi.json (npm run schemas writes it)', () => {
    expect(JSON.parse(readFileSync(join(LIB, 'asyncapi.json'), 'utf8'))).toEqual(document);
  });

  it('validates as AsyncAPI 3 with @asyncapi/parser, every topic a channel with its message', async () => {
    const { document: parsed, diagnostics } = await new Parser().parse(JSON.stringify(document));
    expect(diagnostics.filter((diagnostic) => diagnostic.severity === 0)).toEqual([]);
    expect(
      parsed
        ?.channels()
        .all()
        .map((channel) => channel.address())
        .sort(),
    ).toEqual([...topics].sort());
    for (const channel of parsed?.channels().all() ?? [])
      expect({ address: channel.address(), messages: channel.messages().length }).toEqual({
        address: channel.address(),
        messages: 1,
      });
  });

  it("gives examples each topic's schema accepts", () => {
    for (const topic of topics) {
      expect(EVENT_EXAMPLES[topic].length).toBeGreaterThan(0);
      for (const { event } of EVENT_EXAMPLES[topic])
        expect(parseEvent(topic, JSON.stringify(event)).ok).toBe(true);
    }
  });
});

describe('the evolution of a .v1 topic', () => {
  const baseline = (topic: Topic): unknown =>
    JSON.parse(readFileSync(join(LIB, 'schemas', 'v1-baseline', `${topic}.schema.json`), 'utf8'));

  it.each(topics)('%s only gained what breaks no consumer since it was first published', (topic) => {
    expect(breakingChanges(baseline(topic), jsonSchemaOf(topic))).toEqual([]);
  });

  const base = {
    type: 'object',
    required: ['nodeId', 'revision'],
    properties: {
      nodeId: { type: 'string' },
      revision: { type: 'integer' },
      outcome: { type: 'string', enum: ['generated', 'failed'] },
      files: { type: 'array', items: { type: 'object', properties: { sha256: { type: 'string' } } } },
    },
  };

  it('allows an optional field, a value or a union branch added', () => {
    const grown = {
      ...base,
      properties: {
        ...base.properties,
        catchUp: { type: 'boolean' },
        outcome: { type: 'string', enum: ['generated', 'failed', 'unchanged'] },
      },
    };
    expect(breakingChanges(base, grown)).toEqual([]);
    expect(breakingChanges({ oneOf: [base] }, { oneOf: [base, { type: 'object' }] })).toEqual([]);
  });

  it('refuses a field removed or retyped, a value dropped, a field newly required, a branch removed', () => {
    const { revision: _revision, ...withoutRevision } = base.properties;
    expect(breakingChanges(base, { ...base, properties: withoutRevision })).toEqual(['$.revision: removed']);
    expect(
      breakingChanges(base, { ...base, properties: { ...base.properties, revision: { type: 'string' } } }),
    ).toEqual(['$.revision: type "integer" became "string"']);
    expect(
      breakingChanges(base, {
        ...base,
        properties: { ...base.properties, outcome: { type: 'string', enum: ['generated'] } },
      }),
    ).toEqual(['$.outcome: the value "failed" is no longer allowed']);
    expect(breakingChanges(base, { ...base, required: [...base.required, 'outcome'] })).toEqual([
      '$.outcome: newly required',
    ]);
    const deeper = {
      ...base,
      properties: { ...base.properties, files: { type: 'array', items: { type: 'object', properties: {} } } },
    };
    expect(breakingChanges(base, deeper)).toEqual(['$.files[].sha256: removed']);
    expect(breakingChanges({ oneOf: [base, base] }, { oneOf: [base] })).toEqual(['$.oneOf[1]: removed']);
  });
});
