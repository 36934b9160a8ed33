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
import type { GenerationLoop } from '../generation/generation-loop';
import { DEAD_LETTERS, GENERATION_LOOP } from './tokens';

/** Consumer groups, as the transport names them: see `createGeneratorApp`. */
export const CHANGE_LOG_GROUP = 'change-log';
export const GENERATORS_GROUP = 'generators';

/**
 * The generator's subscriptions. Every instance reads the whole change log, in a group of its
 * own; the instances share the generation requests, whose partitions say which nodes each owns.
 * Handlers only queue work for the loop, so a long cycle never costs them their membership.
 */
@Controller()
export class GeneratorEventsController {
  constructor(
    @Inject(GENERATION_LOOP) private readonly loop: GenerationLoop,
    @Inject(DEAD_LETTERS) private readonly deadLetters: DeadLetters,
  ) {}

  /** Sends what the group cannot read to the DLQ, naming the group (a replay is meant for it). */
  private unreadable(context: MessagingContext) {
    return (message: IncomingMessage, issues: readonly { path: string; message: string }[]) =>
      this.deadLetters.send(message, issues, context.groupId);
  }

  @EventPattern(TOPICS.configChanges, {
    group: CHANGE_LOG_GROUP,
    fromBeginning: true,
  } satisfies EventPatternExtras)
  async changes(@Payload() batch: MessageBatch, @Ctx() context: MessagingContext): Promise<void> {
    for (const { event } of await readEvents(TOPICS.configChanges, batch.messages, this.unreadable(context)))
      this.loop.enqueue({ kind: 'change', event });
  }

  @EventPattern(TOPICS.generationRequests, { group: GENERATORS_GROUP } satisfies EventPatternExtras)
  async requests(@Payload() batch: MessageBatch, @Ctx() context: MessagingContext): Promise<void> {
    for (const { event } of await readEvents(
      TOPICS.generationRequests,
      batch.messages,
      this.unreadable(context),
    ))
      this.loop.enqueue({ kind: 'request', nodeId: event.nodeId, revision: event.revision });
  }
}
