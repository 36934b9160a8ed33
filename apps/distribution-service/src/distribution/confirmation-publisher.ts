import type { Logger } from 'pino';
import { Histogram } from 'prom-client';
import type { Registry } from 'prom-client';
import type { Confirmation, ConfirmationSink } from '@policygen/distribution';
import type { DistributionEvent } from '@policygen/events';
import type { MessageProducer } from '@policygen/messaging';

const STAGES = ['generated', 'distributed', 'confirmed'] as const;

/**
 * The root's end of the confirmations relays pass up: one `distribution.confirmed` event each
 * (keyed by relay), and the generation lag per stage, from the revision's commit.
 */
export class ConfirmationPublisher implements ConfirmationSink {
  private readonly lag: Histogram<'stage' | 'relay'>;

  constructor(
    private readonly producer: MessageProducer,
    private readonly topic: string,
    registry: Registry,
    private readonly logger: Logger,
  ) {
    this.lag = new Histogram({
      name: 'policygen_generation_lag_seconds',
      help: "From a revision's commit to each stage of its bundle: generated, written to the root feed, confirmed by a relay",
      labelNames: ['stage', 'relay'],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [registry],
    });
  }

  async confirm(confirmations: readonly Confirmation[]): Promise<void> {
    if (confirmations.length === 0) return;
    const events = confirmations.map((confirmation): DistributionEvent => {
      const committed = Date.parse(confirmation.committedAt);
      const at = {
        generated: Date.parse(confirmation.generatedAt),
        distributed: Date.parse(confirmation.distributedAt),
        confirmed: Date.parse(confirmation.confirmedAt),
      };
      for (const stage of STAGES)
        this.lag.observe({ stage, relay: confirmation.relayId }, Math.max(0, at[stage] - committed) / 1000);
      return {
        schemaVersion: 1,
        type: 'distribution.confirmed',
        ...confirmation,
        lagMs: Math.max(0, at.confirmed - committed),
      };
    });
    await this.producer.send(
      this.topic,
      events.map((event) => ({ key: event.relayId, value: JSON.stringify(event) })),
    );
    this.logger.debug({ confirmations: events.length }, 'relay confirmations published');
  }
}
