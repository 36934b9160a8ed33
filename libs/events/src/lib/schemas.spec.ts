import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { Topic } from '@policygen/sdk/contract';
import { TOPICS } from '@policygen/sdk/contract';
import { jsonSchemaOf, parseEvent } from '@policygen/sdk/contract';

const SCHEMAS = join(__dirname, '..', '..', 'schemas');
const HASH = `sha256:${'ab'.repeat(32)}`;
const DIGEST = 'cd'.repeat(32);
const AT = '2026-11-21T08:00:00.000Z';

/** A valid event of each topic, and ways to break it. */
const VALID: Record<Topic, Record<string, unknown>[]> = {
  [TOPICS.configChanges]: [
    {
      schemaVersion: 1,
      type: 'config.change',
      revision: 7,
      committedAt: AT,
      changeSet: { upsert: { nodes: [{ id: 'n1', hostname: 'n1' }] }, delete: { rules: ['r-old'] } },
    },
    {
      schemaVersion: 1,
      type: 'config.change',
      revision: 8,
      committedAt: AT,
      changeSetOmitted: { bytes: 4_200_000 },
    },
  ],
  [TOPICS.generationRequests]: [{ schemaVersion: 1, type: 'generation.request', nodeId: 'n1', revision: 0 }],
  [TOPICS.nodeBundles]: [
    {
      schemaVersion: 1,
      type: 'node.bundle',
      nodeId: 'n1',
      revision: 7,
      committedAt: AT,
      hash: HASH,
      files: [{ path: 'rules/cfengine-community/promises.cf', sha256: DIGEST }],
      manifest: { schemaVersion: 1, nodeId: 'n1' },
    },
    {
      schemaVersion: 1,
      type: 'node.bundle',
      nodeId: 'n2',
      revision: 7,
      committedAt: AT,
      generatedAt: AT,
      hash: HASH,
      files: [],
      manifest: { schemaVersion: 1, nodeId: 'n2' },
    },
    {
      schemaVersion: 1,
      type: 'node.bundle',
      nodeId: 'n3',
      revision: 9,
      committedAt: AT,
      generatedAt: AT,
      hash: HASH,
      files: [{ path: 'rules/cfengine-community/promises.cf', sha256: DIGEST }],
      manifestSha256: DIGEST,
    },
    { schemaVersion: 1, type: 'node.deleted', nodeId: 'n1', revision: 8, committedAt: AT },
  ],
  [TOPICS.generationEvents]: [
    {
      schemaVersion: 1,
      type: 'generation.result',
      nodeId: 'n1',
      revision: 7,
      outcome: 'failed',
      hash: null,
      errors: [{ code: 'DEPENDENCY_CYCLE', message: 'Found 1 dependency cycle', directiveIds: ['a', 'b'] }],
      durationMs: 0.4,
    },
  ],
  [TOPICS.distributionEvents]: [
    {
      schemaVersion: 1,
      type: 'distribution.confirmed',
      relayId: 'relay-eu',
      nodeId: 'n1',
      hash: HASH,
      revision: 7,
      committedAt: '2026-11-21T10:00:00.000Z',
      generatedAt: '2026-11-21T10:00:00.020Z',
      distributedAt: '2026-11-21T10:00:00.045Z',
      confirmedAt: '2026-11-21T10:00:00.120Z',
      lagMs: 120,
    },
  ],
  [TOPICS.latestBundles]: [
    {
      schemaVersion: 1,
      type: 'node.bundle',
      nodeId: 'n3',
      revision: 9,
      committedAt: AT,
      generatedAt: AT,
      hash: HASH,
      files: [{ path: 'rules/cfengine-community/promises.cf', sha256: DIGEST }],
      manifestSha256: DIGEST,
    },
  ],
  [TOPICS.pipelineSummaries]: [
    {
      schemaVersion: 1,
      type: 'generation.summary',
      batchId: 'b1',
      revision: 7,
      committedAt: AT,
      generatedAt: AT,
      catchUp: true,
      results: [
        ['n1', 'generated', HASH],
        ['n2', 'failed', null],
      ],
      failures: [
        { nodeId: 'n2', errors: [{ code: 'DEPENDENCY_CYCLE', message: 'Found 1 dependency cycle' }] },
      ],
    },
    {
      schemaVersion: 1,
      type: 'distribution.summary',
      batchId: 'b2',
      revision: 7,
      publishedAt: AT,
      confirmed: [['relay-eu', 'n1', 7, HASH, 1_000, 1_020, 1_045, 1_120, false]],
      fetched: [['relay-eu', 'n1', 7, HASH, 1_000, 1_500, true]],
    },
  ],
};

const BREAKS: readonly [string, (event: Record<string, unknown>) => Record<string, unknown>][] = [
  ['without schemaVersion', ({ schemaVersion: _version, ...rest }) => rest],
  ['of another schemaVersion', (event) => ({ ...event, schemaVersion: 2 })],
  ['of another type', (event) => ({ ...event, type: 'something.else' })],
  ['with a negative revision', (event) => ({ ...event, revision: -1 })],
  ['with a fractional revision', (event) => ({ ...event, revision: 1.5 })],
];

const ajv = new Ajv2020({ allErrors: true, strict: true });
addFormats(ajv);

function published(topic: Topic): Record<string, unknown> {
  return JSON.parse(readFileSync(join(SCHEMAS, `${topic}.schema.json`), 'utf8')) as Record<string, unknown>;
}

describe.each(Object.values(TOPICS))('events of %s', (topic) => {
  const validate = ajv.compile(published(topic));

  it('have a published JSON Schema that is the one the code checks with (npm run schemas writes it)', () => {
    expect(published(topic)).toEqual(jsonSchemaOf(topic));
  });

  it('pass the published schema and the code alike when valid', () => {
    for (const event of VALID[topic]) {
      expect(validate(event)).toBe(true);
      expect(parseEvent(topic, JSON.stringify(event))).toEqual({ ok: true, event });
    }
  });

  it.each(BREAKS)('fail both when %s', (_name, breakIt) => {
    for (const event of VALID[topic]) {
      const broken = breakIt(event);
      expect(validate(broken)).toBe(false);
      const parsed = parseEvent(topic, broken);
      expect(parsed.ok).toBe(false);
    }
  });

  it('accept fields they do not know: a consumer keeps working when producers add some', () => {
    for (const event of VALID[topic]) {
      expect(validate({ ...event, addedLater: true })).toBe(true);
      expect(parseEvent(topic, { ...event, addedLater: true }).ok).toBe(true);
    }
  });
});

describe('config change events', () => {
  it('carry their change set or say it was left out, one or the other', () => {
    const validate =
      ajv.getSchema(String(published(TOPICS.configChanges)['$id'])) ??
      ajv.compile(published(TOPICS.configChanges));
    const { changeSet: _changeSet, ...neither } = VALID[TOPICS.configChanges][0] as Record<string, unknown>;
    expect(validate(neither)).toBe(false);
    expect(parseEvent(TOPICS.configChanges, neither).ok).toBe(false);
  });
});

describe('latest bundle records', () => {
  it('are bundles only: a deletion is a tombstone, not a node.deleted value', () => {
    const deleted = { schemaVersion: 1, type: 'node.deleted', nodeId: 'n1', revision: 8, committedAt: AT };
    expect(parseEvent(TOPICS.nodeBundles, deleted).ok).toBe(true);
    expect(parseEvent(TOPICS.latestBundles, deleted).ok).toBe(false);
    const validate =
      ajv.getSchema(String(published(TOPICS.latestBundles)['$id'])) ??
      ajv.compile(published(TOPICS.latestBundles));
    expect(validate(deleted)).toBe(false);
  });
});

describe('pipeline summaries', () => {
  const validate = (): ReturnType<typeof ajv.compile> =>
    ajv.getSchema(String(published(TOPICS.pipelineSummaries)['$id'])) ??
    ajv.compile(published(TOPICS.pipelineSummaries));
  const [generation, distribution] = VALID[TOPICS.pipelineSummaries] as [
    Record<string, unknown>,
    Record<string, unknown>,
  ];

  it.each([
    ['a result that is not [nodeId, outcome, hash]', { ...generation, results: [['n1', 'generated']] }],
    ['an unknown outcome', { ...generation, results: [['n1', 'lost', HASH]] }],
    ['a hash that is not one', { ...generation, results: [['n1', 'generated', 'abc']] }],
    ['a failure without errors', { ...generation, failures: [{ nodeId: 'n2' }] }],
    [
      'a confirmation with a time that is not epoch ms',
      { ...distribution, confirmed: [['relay-eu', 'n1', 7, HASH, AT, 1, 2, 3, false]] },
    ],
    [
      'a fetch report one field short',
      { ...distribution, fetched: [['relay-eu', 'n1', 7, HASH, 1_000, 1_500]] },
    ],
  ])('refuse %s, in the published schema and the code alike', (_name, broken) => {
    expect(validate()(broken)).toBe(false);
    expect(parseEvent(TOPICS.pipelineSummaries, broken).ok).toBe(false);
  });
});

describe('parseEvent', () => {
  it('names the path of every issue', () => {
    const parsed = parseEvent(TOPICS.nodeBundles, {
      schemaVersion: 1,
      type: 'node.bundle',
      nodeId: 'n1',
      revision: 3,
      committedAt: 'yesterday',
      hash: 'sha256:xyz',
      files: [{ path: 'a', sha256: 'nope' }],
      manifest: {},
    });
    expect(parsed.ok).toBe(false);
    expect(parsed.ok ? [] : parsed.issues.map((issue) => issue.path).sort()).toEqual(
      ['$.committedAt', '$.files[0].sha256', '$.hash'].sort(),
    );
  });

  it('refuses a bundle that names no manifest', () => {
    const parsed = parseEvent(TOPICS.nodeBundles, {
      schemaVersion: 1,
      type: 'node.bundle',
      nodeId: 'n1',
      revision: 3,
      committedAt: AT,
      hash: HASH,
      files: [],
    });
    expect(parsed).toEqual({
      ok: false,
      issues: [{ path: '$.manifestSha256', message: expect.stringContaining('names its manifest') }],
    });
  });

  it('says when a message is not JSON', () => {
    expect(parseEvent(TOPICS.configChanges, '{"revision": ')).toEqual({
      ok: false,
      issues: [{ path: '$', message: expect.stringMatching(/^not JSON: /) }],
    });
  });
});
