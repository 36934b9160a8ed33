import type { EventOf } from '@policygen/sdk/contract';
import type { Topic } from '@policygen/sdk/contract';
import { CONFIG_CHANGES_KEY, TOPICS } from '@policygen/sdk/contract';

const AT = '2026-11-24T10:00:00.000Z';
const LATER = '2026-11-24T10:00:00.140Z';
const HASH = `sha256:${'3f'.repeat(32)}`;
const DIGEST = '9c'.repeat(32);

/** One typical event of each topic, with its key: the docs' examples, each valid against its schema. */
export const EVENT_EXAMPLES: {
  readonly [T in Topic]: readonly { readonly key: string; readonly event: EventOf[T] }[];
} = {
  [TOPICS.configChanges]: [
    {
      key: CONFIG_CHANGES_KEY,
      event: {
        schemaVersion: 1,
        type: 'config.change',
        revision: 12,
        committedAt: AT,
        changeSet: { upsert: { nodes: [{ id: 'web-par-001', hostname: 'web-par-001.example.com' }] } },
      },
    },
  ],
  [TOPICS.generationRequests]: [
    {
      key: 'web-par-001',
      event: { schemaVersion: 1, type: 'generation.request', nodeId: 'web-par-001', revision: 12 },
    },
  ],
  [TOPICS.nodeBundles]: [
    {
      key: 'web-par-001',
      event: {
        schemaVersion: 1,
        type: 'node.bundle',
        nodeId: 'web-par-001',
        revision: 12,
        committedAt: AT,
        generatedAt: LATER,
        hash: HASH,
        files: [{ path: 'rules/cfengine-community/promises.cf', sha256: DIGEST }],
        manifestSha256: 'a1'.repeat(32),
      },
    },
    {
      key: 'web-par-002',
      event: { schemaVersion: 1, type: 'node.deleted', nodeId: 'web-par-002', revision: 13, committedAt: AT },
    },
  ],
  [TOPICS.generationEvents]: [
    {
      key: 'db-par-001',
      event: {
        schemaVersion: 1,
        type: 'generation.result',
        nodeId: 'db-par-001',
        revision: 12,
        outcome: 'failed',
        hash: HASH,
        errors: [
          {
            code: 'MISSING_DEPENDENCY',
            message: 'Could not find dependency Directive[dir-app] for Directive[cron-db-backup]',
            directiveIds: ['cron-db-backup', 'dir-app'],
          },
        ],
        durationMs: 3.2,
      },
    },
  ],
  [TOPICS.distributionEvents]: [
    {
      key: 'relay-eu',
      event: {
        schemaVersion: 1,
        type: 'distribution.confirmed',
        relayId: 'relay-eu',
        nodeId: 'web-par-001',
        hash: HASH,
        revision: 12,
        committedAt: AT,
        generatedAt: AT,
        distributedAt: AT,
        confirmedAt: LATER,
        lagMs: 140,
      },
    },
    {
      key: 'relay-eu',
      event: {
        schemaVersion: 1,
        type: 'node.fetched',
        relayId: 'relay-eu',
        nodeId: 'web-par-001',
        hash: HASH,
        revision: 12,
        committedAt: AT,
        fetchedAt: LATER,
        lagMs: 140,
      },
    },
  ],
  [TOPICS.latestBundles]: [
    {
      key: 'web-par-001',
      event: {
        schemaVersion: 1,
        type: 'node.bundle',
        nodeId: 'web-par-001',
        revision: 12,
        committedAt: AT,
        generatedAt: LATER,
        hash: HASH,
        files: [{ path: 'rules/cfengine-community/promises.cf', sha256: DIGEST }],
        manifestSha256: 'a1'.repeat(32),
      },
    },
  ],
  [TOPICS.pipelineSummaries]: [
    {
      key: 'generation',
      event: {
        schemaVersion: 1,
        type: 'generation.summary',
        batchId: '0b9f6c1e-5d2a-4f3e-9a71-3c8d2e4f5a60',
        revision: 12,
        committedAt: AT,
        generatedAt: LATER,
        results: [
          ['web-par-001', 'generated', HASH],
          ['web-par-002', 'unchanged', HASH],
          ['db-par-001', 'failed', null],
        ],
        failures: [
          {
            nodeId: 'db-par-001',
            errors: [
              {
                code: 'MISSING_DEPENDENCY',
                message: 'Could not find dependency Directive[dir-app] for Directive[cron-db-backup]',
                directiveIds: ['cron-db-backup', 'dir-app'],
              },
            ],
          },
        ],
      },
    },
    {
      key: 'distribution',
      event: {
        schemaVersion: 1,
        type: 'distribution.summary',
        batchId: '5e2d7a90-1c4b-4e8f-b3a6-9d0f1e2c3b4a',
        revision: 12,
        publishedAt: LATER,
        confirmed: [
          [
            'relay-eu',
            'web-par-001',
            12,
            HASH,
            Date.parse(AT),
            Date.parse(AT) + 20,
            Date.parse(AT) + 45,
            Date.parse(LATER),
            false,
          ],
        ],
        fetched: [['relay-eu', 'web-par-001', 12, HASH, Date.parse(AT), Date.parse(LATER), false]],
      },
    },
  ],
};
