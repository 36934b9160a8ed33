import { Controller, Inject } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import type { ConfigChangeEvent } from '@policygen/events';
import { parseEvent, TOPICS } from '@policygen/events';
import type { DeadLetters, EventPatternExtras, MessageBatch } from '@policygen/messaging';
import type { Distributor, ReceivedBundleEvent } from '../distribution/distributor';
import { DEAD_LETTERS, DISTRIBUTOR } from './tokens';

/** Consumer groups, as the transport names them: see `startDistributionService`. */
export const CHANGE_LOG_GROUP = 'change-log';
export const BUNDLES_GROUP = 'bundles';

/**
 * The distribution-service's subscriptions: the generator's bundles, and the change log for the
 * relay tree. A batch is handled whole before its offsets are committed.
 */
@Controller()
export class DistributionEventsController {
  constructor(
    @Inject(DISTRIBUTOR) private readonly distributor: Distributor,
    @Inject(DEAD_LETTERS) private readonly deadLetters: DeadLetters,
  ) {}

  @EventPattern(TOPICS.nodeBundles, {
    group: BUNDLES_GROUP,
    fromBeginning: true,
  } satisfies EventPatternExtras)
  async bundles(@Payload() batch: MessageBatch): Promise<void> {
    const received: ReceivedBundleEvent[] = [];
    for (const message of batch.messages) {
      const parsed = parseEvent(TOPICS.nodeBundles, message.value.toString('utf8'));
      if (parsed.ok) received.push({ event: parsed.event, receivedAt: message.timestamp });
      else await this.deadLetters.send(message, parsed.issues);
    }
    await this.distributor.bundles(received);
  }

  @EventPattern(TOPICS.configChanges, {
    group: CHANGE_LOG_GROUP,
    fromBeginning: true,
  } satisfies EventPatternExtras)
  async changes(@Payload() batch: MessageBatch): Promise<void> {
    const events: ConfigChangeEvent[] = [];
    for (const message of batch.messages) {
      const parsed = parseEvent(TOPICS.configChanges, message.value.toString('utf8'));
      if (parsed.ok) events.push(parsed.event);
      else await this.deadLetters.send(message, parsed.issues);
    }
    await this.distributor.changes(events);
  }
}
