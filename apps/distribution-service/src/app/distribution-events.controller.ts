import { Controller, Inject } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { readEvents, TOPICS } from '@policygen/events';
import type {
  DeadLetters,
  EventPatternExtras,
  IncomingMessage,
  MessageBatch,
  MessagingContext,
} from '@policygen/messaging';
import type { Distributor } from '../distribution/distributor';
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

  /** Sends what the group cannot read to the DLQ, naming the group (a replay is meant for it). */
  private unreadable(context: MessagingContext) {
    return (message: IncomingMessage, issues: readonly { path: string; message: string }[]) =>
      this.deadLetters.send(message, issues, context.groupId);
  }

  @EventPattern(TOPICS.nodeBundles, {
    group: BUNDLES_GROUP,
    fromBeginning: true,
    // The distributor writes the batches that arrive together once (its group commit).
    concurrentPartitions: 12,
  } satisfies EventPatternExtras)
  async bundles(@Payload() batch: MessageBatch, @Ctx() context: MessagingContext): Promise<void> {
    const events = await readEvents(TOPICS.nodeBundles, batch.messages, this.unreadable(context), {
      heldFiles: (nodeId) => this.distributor.heldFiles(nodeId),
    });
    await this.distributor.bundles(
      events.map(({ event, message }) => ({ event, receivedAt: message.timestamp, json: message.value })),
    );
  }

  @EventPattern(TOPICS.configChanges, {
    group: CHANGE_LOG_GROUP,
    fromBeginning: true,
  } satisfies EventPatternExtras)
  async changes(@Payload() batch: MessageBatch, @Ctx() context: MessagingContext): Promise<void> {
    const events = await readEvents(TOPICS.configChanges, batch.messages, this.unreadable(context));
    await this.distributor.changes(events.map(({ event }) => event));
  }
}
