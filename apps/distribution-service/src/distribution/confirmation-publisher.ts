import type { Logger } from 'pino';
import type { Histogram, Registry } from 'prom-client';
import type { Confirmation, ConfirmationSink } from '@policygen/distribution';
import type { DistributionEvent } from '@policygen/events';
import type { MessageProducer } from '@policygen/messaging';
import { pipelineLagHistogram } from '@policygen/service-kit';

/**
 * The root's end of the confirmations relays pass up: one `distribution.confirmed` event each
 * (keyed by relay), and the pipeline's lag per stage from the revision's commit — generated,
 * written to the root feed, on the relay — a catch-up's bundles apart from a change's own.
 */
export class ConfirmationPublisher implements ConfirmationSink {
  private readonly lag: Histogram<'stage' | 'phase' | 'relay'>;

  constructor(
    private readonly producer: MessageProducer,
    private readonly topic: string,
    registry: Registry,
    private readonly logger: Logger,
  ) {
    this.lag = pipelineLagHistogram(registry);
  }

  async confirm(confirmations: readonly Confirmation[]): Promise<void> {
    if (confirmations.length === 0) return;
    const events = confirmations.map((confirmation): DistributionEvent => {
      const committed = Date.parse(confirmation.committedAt);
      const phase = confirmation.catchUp ? 'catchup' : 'steady';
      const relay = confirmation.relayId;
      const stages = [
        ['generated', confirmation.generatedAt],
        ['distributed', confirmation.distributedAt],
        ['relay', confirmation.confirmedAt],
      ] as const;
      for (const [stage, at] of stages)
        this.lag.observe({ stage, phase, relay }, Math.max(0, Date.parse(at) - committed) / 1000);
      return {
        schemaVersion: 1,
        type: 'distribution.confirmed',
        ...confirmation,
        lagMs: Math.max(0, Date.parse(confirmation.confirmedAt) - committed),
      };
    });
    await this.producer.send(
      this.topic,
      events.map((event) => ({ key: event.relayId, value: JSON.stringify(event) })),
    );
    this.logger.debug({ confirmations: events.length }, 'relay confirmations published');
  }
}
