import { randomBytes } from 'node:crypto';
import { CONFIG_CHANGES_KEY, parseEvent, TOPICS } from '@policygen/events';
import type { ConfigChangeEvent } from '@policygen/events';
import type { MessageConsumer } from '@policygen/messaging';
import { PostgresConfigStore } from '@policygen/store';
import { eventually, getTestInfrastructure } from '@policygen/testing-infra';
import { withFailingSends } from './testing/failing-sends';
import { node, smallFleet } from './testing/fixtures';
import type { RunningConfigService } from './testing/running-config-service';
import {
  dropSchema,
  startConfigService,
  testMessaging,
  uniqueSchema,
} from './testing/running-config-service';

/** The events these tests make are small: they carry their change set. */
type InlineChange = Extract<ConfigChangeEvent, { changeSet: unknown }>;

interface Received {
  readonly key: string | null;
  readonly event: InlineChange;
}

/** The transactional outbox, from the service's commits to the real change-log topic. */
describe('config service: outbox', () => {
  const messaging = testMessaging('config-service-outbox-it');
  let consumer: MessageConsumer;
  const received: Received[] = [];

  beforeAll(async () => {
    const admin = await messaging.createAdmin();
    await admin.createTopics([{ name: TOPICS.configChanges, partitions: 1 }]);
    await admin.close();
    consumer = await messaging.createConsumer({
      groupId: `config-service-outbox-it-${randomBytes(6).toString('hex')}`,
      topics: [TOPICS.configChanges],
      fromBeginning: true,
    });
    await consumer.start(async (batch) => {
      for (const message of batch.messages) {
        const parsed = parseEvent(TOPICS.configChanges, message.value.toString('utf8'));
        if (!parsed.ok) throw new Error(`a malformed event: ${JSON.stringify(parsed.issues)}`);
        if ('changeSet' in parsed.event) received.push({ key: message.key, event: parsed.event });
      }
    });
  });
  afterAll(async () => {
    await consumer?.close();
  });

  /** Other suites share the topic; a test's own events all carry its marker. */
  function eventsMarked(marker: string): Received[] {
    return received.filter((entry) => JSON.stringify(entry.event.changeSet).includes(marker));
  }

  async function withSchema(
    test: (schema: string, store: PostgresConfigStore) => Promise<void>,
  ): Promise<void> {
    const schema = uniqueSchema('cs_outbox');
    const store = new PostgresConfigStore({ connectionString: getTestInfrastructure().databaseUrl, schema });
    try {
      await test(schema, store);
    } finally {
      await store.close();
      await dropSchema(schema);
    }
  }

  it('publishes every committed revision in order, keyed config, as committed', async () => {
    await withSchema(async (schema, store) => {
      const marker = `m${randomBytes(6).toString('hex')}`;
      const service = await startConfigService({ schema });
      try {
        const { api } = service;
        await api.post('/api/v1/import', { ...smallFleet(), parameters: { [marker]: 0 } });
        await api.post('/api/v1/nodes', node(`${marker}-n`));
        await api.put(`/api/v1/parameters/${marker}`, 1);
        await api.delete(`/api/v1/nodes/${marker}-n`);
        await api.post('/api/v1/nodes', node(`${marker}-refused`, 'relay-gone')); // refused: no event
        await Promise.all(
          Array.from({ length: 10 }, (_, index) =>
            api.post('/api/v1/changes', { upsert: { parameters: { [`${marker}_${index}`]: index } } }),
          ),
        );
        await eventually(() => eventsMarked(marker).length >= 14, { what: 'revisions 1 to 14 on the topic' });
        const metrics = (await api.as(null).get('/metrics')).text;
        expect(metrics).toMatch(/^policygen_config_outbox_published_total 14$/m);
        // Its own commits' events are sent as the commits gave them: reads are for the timer's
        // ticks and gaps, not one a send.
        expect(metrics).toMatch(/^policygen_config_outbox_reads_total \d+$/m);
        const sends = Number(
          /^policygen_config_outbox_sends_total\{result="ok"\} (\d+)$/m.exec(metrics)?.[1],
        );
        // The ten concurrent commits come within one window: fewer sends than events.
        expect(sends).toBeGreaterThanOrEqual(1);
        expect(sends).toBeLessThan(14);
        // Each sent event is marked published once: by a later commit's statement, or on its own
        // once commits stop.
        const marked = async (): Promise<number> => {
          const text = (await api.as(null).get('/metrics')).text;
          const count = (by: string): number =>
            Number(
              new RegExp(`^policygen_config_outbox_marks_total\\{by="${by}"\\} (\\d+)$`, 'm').exec(
                text,
              )?.[1] ?? 0,
            );
          return count('commit') + count('itself');
        };
        await eventually(async () => (await marked()) >= 14, { what: 'the 14 events marked published' });
        expect(await marked()).toBe(14);
        expect(await store.unpublished()).toEqual([]);
      } finally {
        await service.stop();
      }
      const events = eventsMarked(marker);
      expect(events.map((entry) => entry.event.revision)).toEqual(
        Array.from({ length: 14 }, (_, index) => index + 1),
      );
      expect(new Set(events.map((entry) => entry.key))).toEqual(new Set([CONFIG_CHANGES_KEY]));
      const log = await store.changesSince(0);
      expect(events.map((entry) => entry.event.changeSet)).toEqual(
        log.map((change) => JSON.parse(JSON.stringify(change.changeSet))),
      );
      expect(events.map((entry) => entry.event.committedAt)).toEqual(
        log.map((change) => change.committedAt.toISOString()),
      );
      expect(events[3]?.event.changeSet.delete).toMatchObject({ nodes: [`${marker}-n`] });
      expect(await store.unpublished()).toEqual([]);
    });
  });

  it('loses nothing when publishing fails: the timer retries, and a restart sends what a crash left', async () => {
    await withSchema(async (schema, store) => {
      const marker = `m${randomBytes(6).toString('hex')}`;
      let brokerDown = true;
      const flaky = await startConfigService({
        schema,
        messaging: withFailingSends(testMessaging(), () => brokerDown),
        publishIntervalMs: 200,
      });
      try {
        const committed = await flaky.api.post('/api/v1/parameters', { name: marker, value: 1 });
        expect(committed.status).toBe(201); // the answer does not wait for the broker
        await flaky.api.put(`/api/v1/parameters/${marker}`, 2);
        expect((await store.unpublished()).length).toBe(2);
        brokerDown = false;
        await eventually(() => eventsMarked(marker).length >= 2, {
          what: 'revisions 1 and 2 after the outage',
        });
        expect(eventsMarked(marker).map((entry) => entry.event.revision)).toEqual([1, 2]);

        // Down again, and the process stops before it could publish revision 3.
        brokerDown = true;
        await flaky.api.put(`/api/v1/parameters/${marker}`, 3);
      } finally {
        await flaky.stop();
      }
      expect((await store.unpublished()).map((message) => message.payload)).toMatchObject([{ revision: 3 }]);

      const restarted: RunningConfigService = await startConfigService({ schema });
      try {
        await eventually(() => eventsMarked(marker).length >= 3, { what: 'revision 3 after the restart' });
        await eventually(async () => (await store.unpublished()).length === 0, { what: 'an empty outbox' });
      } finally {
        await restarted.stop();
      }
      expect(eventsMarked(marker).map((entry) => entry.event.revision)).toEqual([1, 2, 3]);
      expect(eventsMarked(marker)[2]?.event.changeSet.upsert).toMatchObject({ parameters: { [marker]: 3 } });
    });
  });
});
