import { Inject, Injectable, Logger } from '@nestjs/common';
import type { OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import type { MessageProducer } from '@policygen/messaging';
import { OutboxPublisher } from '@policygen/store';
import type { ConfigStore } from '@policygen/store';
import type { ServiceTimings } from '../app/config-service-options';
import { CONFIG_STORE, OUTBOX_PRODUCER, SERVICE_TIMINGS } from '../app/tokens';

/**
 * Sends the outbox to the bus: right after each commit, and on a timer, which also picks up what
 * a failed send or a crash before publishing left behind. One drain runs at a time; a request for
 * another while it runs makes it go round once more.
 */
@Injectable()
export class OutboxService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(OutboxService.name);
  private readonly publisher: OutboxPublisher;
  private draining: Promise<void> | undefined;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  private lastFailure: string | undefined;
  private stopped = false;

  constructor(
    @Inject(CONFIG_STORE) store: ConfigStore,
    @Inject(OUTBOX_PRODUCER) private readonly producer: MessageProducer,
    @Inject(SERVICE_TIMINGS) private readonly timings: ServiceTimings,
  ) {
    this.publisher = new OutboxPublisher(store, producer);
  }

  onModuleInit(): void {
    this.publishSoon();
    this.timer = setInterval(() => this.publishSoon(), this.timings.publishIntervalMs);
    this.timer.unref();
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.draining;
    await this.producer.close();
  }

  /** Starts publishing what waits in the outbox, without waiting for it; failures are retried. */
  publishSoon(): void {
    if (this.stopped) return;
    if (this.draining) {
      this.again = true;
      return;
    }
    this.draining = this.drain().finally(() => {
      this.draining = undefined;
    });
  }

  private async drain(): Promise<void> {
    do {
      this.again = false;
      try {
        await this.publisher.publishPending();
        if (this.lastFailure) this.logger.log('the outbox is published again');
        this.lastFailure = undefined;
      } catch (error) {
        const message = (error as Error).message;
        // Logged once per kind of failure, not on every tick of an outage.
        if (message !== this.lastFailure) this.logger.warn(`outbox not published, will retry: ${message}`);
        this.lastFailure = message;
        return;
      }
    } while (this.again && !this.stopped);
  }
}
