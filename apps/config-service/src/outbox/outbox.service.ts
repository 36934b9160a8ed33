import { Inject, Injectable, Logger } from '@nestjs/common';
import type { OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import type { MessageProducer } from '@policygen/messaging';
import type { ServiceShellOptions } from '@policygen/service-kit';
import { SERVICE_SHELL_OPTIONS } from '@policygen/service-kit';
import { Counter } from 'prom-client';
import { OutboxPublisher } from '@policygen/store';
import type { CommittedChange, ConfigStore, OutboxMessage } from '@policygen/store';
import type { ServiceTimings } from '../app/config-service-options';
import { CONFIG_STORE, OUTBOX_PRODUCER, SERVICE_TIMINGS } from '../app/tokens';
import { PacedDrain } from './paced-drain';

/**
 * Sends the outbox to the bus: after each commit, at most once per window while commits come
 * faster (`PacedDrain`), what this instance's commits wrote as they gave it (no read of the outbox
 * while their ids follow what was sent), and on a timer, which reads the outbox for what a failed
 * send, a crash before publishing or another instance left behind.
 */
@Injectable()
export class OutboxService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(OutboxService.name);
  private readonly publisher: OutboxPublisher;
  private readonly paced: PacedDrain;
  private timer: NodeJS.Timeout | undefined;
  private lastFailure: string | undefined;
  /** Sends by result, and the messages sent: their ratio is how many commits a window gathers. */
  private readonly sends: Counter<'result'>;
  private readonly published: Counter;
  private readonly marks: Counter<'by'>;

  constructor(
    @Inject(CONFIG_STORE) store: ConfigStore,
    @Inject(OUTBOX_PRODUCER) private readonly producer: MessageProducer,
    @Inject(SERVICE_TIMINGS) private readonly timings: ServiceTimings,
    @Inject(SERVICE_SHELL_OPTIONS) shell: ServiceShellOptions,
  ) {
    this.marks = new Counter({
      name: 'policygen_config_outbox_marks_total',
      help: 'Sent change events marked published: by the next commit (in its own statement) or on their own (no commit came)',
      labelNames: ['by'],
      registers: [shell.registry],
    });
    this.publisher = new OutboxPublisher(store, producer, undefined, (count) =>
      this.marks.inc({ by: 'itself' }, count),
    );
    this.paced = new PacedDrain(() => this.drain(), timings.outboxWindowMs);
    this.sends = new Counter({
      name: 'policygen_config_outbox_sends_total',
      help: 'Sends of the outbox to the bus (at most one per window while commits come faster), by result',
      labelNames: ['result'],
      registers: [shell.registry],
    });
    this.published = new Counter({
      name: 'policygen_config_outbox_published_total',
      help: 'Change events the outbox sent to the bus',
      registers: [shell.registry],
    });
    const publisher = this.publisher;
    new Counter({
      name: 'policygen_config_outbox_reads_total',
      help: "Reads of the outbox table: a send of what this instance's commits gave, following what was sent, reads nothing",
      registers: [shell.registry],
      collect() {
        this.reset();
        this.inc(publisher.reads);
      },
    });
  }

  onModuleInit(): void {
    this.publishSoon();
    this.timer = setInterval(() => this.publishSoon(), this.timings.publishIntervalMs);
    this.timer.unref();
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    // What a waiting window held stays in the outbox, which the next start sends.
    await this.paced.stop();
    await this.publisher
      .markSent()
      .catch((error: unknown) =>
        this.logger.warn(
          `sent messages not marked published, the next start sends them again: ${(error as Error).message}`,
        ),
      );
    await this.producer.close();
  }

  /**
   * The messages sent and not marked published yet, for the next commit's statement to mark;
   * `giveBack` them when that commit fails before it reached the store.
   */
  takeMarks(): number[] {
    return this.publisher.takeMarks();
  }

  /** A commit's statement marked what `takeMarks` gave it. */
  markedByCommit(ids: readonly number[]): void {
    if (ids.length > 0) this.marks.inc({ by: 'commit' }, ids.length);
  }

  /** Messages sent and not marked published yet: the store still counts them as unpublished. */
  get sentUnmarked(): number {
    return this.publisher.unmarked;
  }

  giveBack(ids: readonly number[]): void {
    if (ids.length > 0) this.publisher.giveBack(ids);
  }

  /** Commits of this instance: their outbox messages are sent as the store gave them, without a read. */
  committed(changes: readonly CommittedChange[]): void {
    const messages: OutboxMessage[] = [];
    for (const change of changes) if (change.outboxMessage) messages.push(change.outboxMessage);
    this.publisher.committed(messages);
    this.publishSoon();
  }

  /** Publishing what waits in the outbox, without waiting for it; failures are retried. */
  publishSoon(): void {
    this.paced.request();
  }

  private async drain(): Promise<void> {
    try {
      const sent = await this.publisher.publishPending();
      if (sent > 0) {
        this.sends.inc({ result: 'ok' });
        this.published.inc(sent);
      }
      if (this.lastFailure) this.logger.log('the outbox is published again');
      this.lastFailure = undefined;
    } catch (error) {
      this.sends.inc({ result: 'failed' });
      const message = (error as Error).message;
      // Logged once per kind of failure, not on every tick of an outage.
      if (message !== this.lastFailure) this.logger.warn(`outbox not published, will retry: ${message}`);
      this.lastFailure = message;
    }
  }
}
