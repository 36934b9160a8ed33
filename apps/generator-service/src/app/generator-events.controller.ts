import { Controller, Inject } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { parseEvent, TOPICS } from '@policygen/events';
import type { DeadLetters, EventPatternExtras, MessageBatch } from '@policygen/messaging';
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

  @EventPattern(TOPICS.configChanges, {
    group: CHANGE_LOG_GROUP,
    fromBeginning: true,
  } satisfies EventPatternExtras)
  async changes(@Payload() batch: MessageBatch): Promise<void> {
    for (const message of batch.messages) {
      const parsed = parseEvent(TOPICS.configChanges, message.value.toString('utf8'));
      if (parsed.ok) this.loop.enqueue({ kind: 'change', event: parsed.event });
      else await this.deadLetters.send(message, parsed.issues);
    }
  }

  @EventPattern(TOPICS.generationRequests, { group: GENERATORS_GROUP } satisfies EventPatternExtras)
  async requests(@Payload() batch: MessageBatch): Promise<void> {
    for (const message of batch.messages) {
      const parsed = parseEvent(TOPICS.generationRequests, message.value.toString('utf8'));
      if (parsed.ok)
        this.loop.enqueue({ kind: 'request', nodeId: parsed.event.nodeId, revision: parsed.event.revision });
      else await this.deadLetters.send(message, parsed.issues);
    }
  }
}
