import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Histogram, Registry } from 'prom-client';
import type { Confirmation, ConfirmationSink } from '@policygen/distribution';
import type { DistributionEvent, NodeFetchedEvent, TopicNames } from '@policygen/events';
import { distributionSummaries } from '@policygen/events';
import type { MessageProducer, TopicMessages } from '@policygen/messaging';
import { pipelineLagHistogram } from '@policygen/service-kit';

/** The key of the distribution-service's summaries on the pipeline-summaries topic. */
export const DISTRIBUTION_SUMMARY_KEY = 'distribution';

/**
 * The root's end of the confirmations: its own (the nodes it serves, once written to its feed) and
 * those relays pass up: one `distribution.confirmed` event each
 * (keyed by relay), and the pipeline's lag per stage from the revision's commit — generated,
 * written to the root feed, on the relay — a catch-up's bundles apart from a change's own. Fetch
 * reports (a node fetched its bundle) become `node.fetched` events; their lag is the relay's metric.
 * Each batch's events also go out as one `distribution.summary` (pipeline summaries topic), in
 * the same request to the bus.
 */
export class ConfirmationPublisher implements ConfirmationSink {
  private readonly lag: Histogram<'stage' | 'phase' | 'relay'>;

  constructor(
    private readonly producer: MessageProducer,
    private readonly topics: Pick<TopicNames, 'distributionEvents' | 'pipelineSummaries'>,
    registry: Registry,
    private readonly logger: Logger,
  ) {
    this.lag = pipelineLagHistogram(registry);
  }

  async confirm(confirmations: readonly Confirmation[]): Promise<void> {
    if (confirmations.length === 0) return;
    await this.producer.sendAll(this.messagesOf(confirmations));
    this.logger.debug({ confirmations: confirmations.length }, 'relay confirmations published');
  }

  /**
   * The messages `confirm` sends, for a caller that sends them with others in one request (the
   * root's own confirmations go with the latest bundles); the lag is observed as they are made.
   */
  messagesOf(confirmations: readonly Confirmation[]): TopicMessages[] {
    if (confirmations.length === 0) return [];
    const events = confirmations.map((confirmation): DistributionEvent => {
      const committed = Date.parse(confirmation.committedAt);
      if (confirmation.fetchedAt !== undefined) return fetched(confirmation, confirmation.fetchedAt);
      const phase = confirmation.catchUp ? 'catchup' : 'steady';
      const relay = confirmation.relayId;
      const stages = [
        ['generated', confirmation.generatedAt],
        ['distributed', confirmation.distributedAt],
        ['relay', confirmation.confirmedAt],
      ] as const;
      for (const [stage, at] of stages)
        this.lag.observe({ stage, phase, relay }, Math.max(0, Date.parse(at) - committed) / 1000);
      const { fetchedAt: _none, ...confirmed } = confirmation;
      return {
        schemaVersion: 1,
        type: 'distribution.confirmed',
        ...confirmed,
        lagMs: Math.max(0, Date.parse(confirmation.confirmedAt) - committed),
      };
    });
    return [
      {
        topic: this.topics.distributionEvents,
        messages: events.map((event) => ({ key: event.relayId, value: JSON.stringify(event) })),
      },
      // The same events, a batch a message, for those who follow the whole pipeline (the config API).
      {
        topic: this.topics.pipelineSummaries,
        messages: distributionSummaries(events, { batchId: randomUUID() }).map((summary) => ({
          key: DISTRIBUTION_SUMMARY_KEY,
          value: JSON.stringify(summary),
        })),
      },
    ];
  }
}

function fetched(report: Confirmation, fetchedAt: string): NodeFetchedEvent {
  return {
    schemaVersion: 1,
    type: 'node.fetched',
    relayId: report.relayId,
    nodeId: report.nodeId,
    hash: report.hash,
    revision: report.revision,
    committedAt: report.committedAt,
    fetchedAt,
    lagMs: Math.max(0, Date.parse(fetchedAt) - Date.parse(report.committedAt)),
    ...(report.catchUp ? { catchUp: true } : {}),
  };
}
