import { randomUUID } from 'node:crypto';
import type { DistributionSummary, GenerationEvent, GenerationSummary } from '@policygen/events';
import { topicsFor } from '@policygen/events';
import type { MessageProducer, MessagingAdmin } from '@policygen/messaging';
import { eventually } from '@policygen/testing-infra';
import { configServiceForSuite, testMessaging } from './testing/running-config-service';

const HASH = `sha256:${'5e'.repeat(32)}`;
const AT = '2026-11-24T10:00:00.000Z';
const T0 = Date.parse(AT);

/** The pipeline's status from the summaries topic alone: on real Kafka, malformed summaries counted, not fatal. */
describe('config service: the pipeline from its summaries', () => {
  const topics = topicsFor(`it-summaries-${randomUUID().slice(0, 8)}`);
  const suite = configServiceForSuite('cs_pipeline_summaries', { topics });
  const messaging = testMessaging('pipeline-summaries-it');
  let admin: MessagingAdmin;
  let producer: MessageProducer;

  async function summariesMetric(): Promise<Record<string, number>> {
    const metrics = await suite.api.as(null).get('/metrics');
    const counts: Record<string, number> = {};
    for (const line of metrics.text.split('\n')) {
      const match = /^policygen_config_pipeline_summaries_total\{result="([^"]+)"\} (\d+)/.exec(line);
      if (match?.[1] !== undefined) counts[match[1]] = Number(match[2]);
    }
    return counts;
  }

  beforeAll(async () => {
    admin = await messaging.createAdmin();
    producer = await messaging.createProducer({ idempotent: true });
    await admin.createTopics([
      { name: topics.generationEvents, partitions: 2 },
      { name: topics.pipelineSummaries, partitions: 1 },
    ]);
  });

  afterAll(async () => {
    await admin.deleteTopics([topics.generationEvents, topics.pipelineSummaries]).catch(() => undefined);
    await producer.close();
    await admin.close();
  });

  it('answers from the summaries, reads no per-node event, and counts what it cannot read', async () => {
    // A per-node event only: the config-service does not follow that topic.
    const perNode: GenerationEvent = {
      schemaVersion: 1,
      type: 'generation.result',
      nodeId: 'only-per-node',
      revision: 98,
      outcome: 'generated',
      hash: HASH,
      errors: [],
      durationMs: 1,
    };
    await producer.send(topics.generationEvents, [{ key: perNode.nodeId, value: JSON.stringify(perNode) }]);
    // The failing node is in the fleet: failures are only listed for nodes that are.
    expect((await suite.api.post('/api/v1/nodes', { id: 'n3', hostname: 'n3.example.com' })).status).toBe(
      201,
    );
    const generation: GenerationSummary = {
      schemaVersion: 1,
      type: 'generation.summary',
      batchId: 'g1',
      revision: 99,
      committedAt: AT,
      generatedAt: new Date(T0 + 20).toISOString(),
      results: [
        ['n1', 'generated', HASH],
        ['n2', 'unchanged', HASH],
        ['n3', 'failed', null],
      ],
      failures: [
        { nodeId: 'n3', errors: [{ code: 'MISSING_DEPENDENCY', message: 'no', directiveIds: ['d1'] }] },
      ],
    };
    const distribution: DistributionSummary = {
      schemaVersion: 1,
      type: 'distribution.summary',
      batchId: 'd1',
      revision: 99,
      publishedAt: new Date(T0 + 200).toISOString(),
      confirmed: [['root', 'n1', 99, HASH, T0, T0 + 20, T0 + 45, T0 + 120, false]],
      fetched: [['root', 'n1', 99, HASH, T0, T0 + 900, false]],
    };
    await producer.send(topics.pipelineSummaries, [
      { key: 'generation', value: 'not json' },
      { key: 'generation', value: JSON.stringify({ ...generation, results: [['n4', 'lost', HASH]] }) },
      { key: 'generation', value: JSON.stringify(generation) },
      { key: 'distribution', value: JSON.stringify(distribution) },
    ]);

    await eventually(async () => (await summariesMetric())['distribution.summary'] === 1, {
      what: 'the summaries read',
    });
    expect(await summariesMetric()).toEqual({
      'generation.summary': 1,
      'distribution.summary': 1,
      unreadable: 2,
    });
    const progress = await suite.api.get('/api/v1/revisions/99/progress');
    expect(progress.body).toEqual({
      revision: 99,
      generated: 1,
      unchanged: 1,
      failed: 1,
      relays: [{ relayId: 'root', delivered: 1 }],
    });
    expect((await suite.api.get('/api/v1/revisions/98/progress')).status).toBe(404);
    const status = await suite.api.get('/api/v1/nodes/n1/status');
    expect(status.body).toMatchObject({
      nodeId: 'n1',
      generation: { revision: 99, outcome: 'generated', hash: HASH },
      relays: [{ relayId: 'root', revision: 99, hash: HASH, confirmedAt: new Date(T0 + 120).toISOString() }],
      fetched: { relayId: 'root', revision: 99, hash: HASH, fetchedAt: new Date(T0 + 900).toISOString() },
    });
    const failures = await suite.api.get('/api/v1/failures?limit=10');
    expect(failures.body).toMatchObject({
      total: 1,
      items: [{ nodeId: 'n3', code: 'MISSING_DEPENDENCY', directiveIds: ['d1'], sinceRevision: 99 }],
    });
    const lag = await suite.api.get('/api/v1/pipeline/lag?window=600');
    expect(lag.body).toMatchObject({ windowSeconds: 600 });
    // The lag is the summary's stages from the commit, whenever the view received it.
    expect((lag.body as { steady: { stage: string; max: number | null }[] }).steady).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ stage: 'generated', count: 1, max: 20 }),
        expect.objectContaining({ stage: 'distributed', count: 1, max: 45 }),
        expect.objectContaining({ stage: 'relay', count: 1, max: 120 }),
        expect.objectContaining({ stage: 'fetched', count: 1, max: 900 }),
      ]),
    );
  });
});
