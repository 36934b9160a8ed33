import type { Logger } from 'pino';
import type { TopicNames } from '@policygen/events';
import { parseEvent, TOPICS } from '@policygen/events';
import type {
  IncomingMessage,
  MessageConsumer,
  MessageProducer,
  Messaging,
  PartitionAssignment,
} from '@policygen/messaging';
import { partitionForKey } from '@policygen/messaging';
import type { GenerationLoop } from './generation-loop';

export interface ConsumerSettings {
  readonly topics: TopicNames;
  /** The consumer group sharing the nodes (generation requests). */
  readonly groupId: string;
  /** This instance's name: its change-log position is its own. */
  readonly instanceId: string;
  readonly requestPartitions: number;
  readonly sessionTimeoutMs?: number;
}

/**
 * The generator's two subscriptions. The change log is followed by every instance in a group of
 * its own (each needs every change set). Generation requests are shared by the instances' common
 * group: the partitions a member is assigned are the nodes it owns, keyed the way Kafka's default
 * partitioner keys a request by node id. Unreadable messages go to the topic's `.dlq` with the
 * reason, and never hold up the others.
 */
export class EventConsumers {
  private readonly consumers: MessageConsumer[] = [];

  constructor(
    private readonly messaging: Messaging,
    private readonly deadLetters: MessageProducer,
    private readonly loop: GenerationLoop,
    private readonly settings: ConsumerSettings,
    private readonly logger: Logger,
  ) {}

  async start(): Promise<void> {
    const { topics } = this.settings;
    const changeLog = await this.messaging.createConsumer({
      groupId: `${this.settings.groupId}.change-log.${this.settings.instanceId}`,
      topics: [topics.configChanges],
      fromBeginning: true,
    });
    this.consumers.push(changeLog);
    await changeLog.start(async (batch) => {
      for (const message of batch.messages) {
        const parsed = parseEvent(TOPICS.configChanges, message.value.toString('utf8'));
        if (parsed.ok) this.loop.enqueue({ kind: 'change', event: parsed.event });
        else await this.deadLetter(message, parsed.issues);
      }
    });

    const requests = await this.messaging.createConsumer({
      groupId: this.settings.groupId,
      topics: [topics.generationRequests],
      ...(this.settings.sessionTimeoutMs === undefined
        ? {}
        : { sessionTimeoutMs: this.settings.sessionTimeoutMs }),
    });
    this.consumers.push(requests);
    requests.onAssignment((assignment) => this.assign(assignment));
    await requests.start(async (batch) => {
      for (const message of batch.messages) {
        const parsed = parseEvent(TOPICS.generationRequests, message.value.toString('utf8'));
        if (parsed.ok)
          this.loop.enqueue({
            kind: 'request',
            nodeId: parsed.event.nodeId,
            revision: parsed.event.revision,
          });
        else await this.deadLetter(message, parsed.issues);
      }
    });
  }

  async stop(): Promise<void> {
    await Promise.all(this.consumers.splice(0).map((consumer) => consumer.close()));
  }

  private assign(assignment: PartitionAssignment): void {
    const partitions = new Set(assignment[this.settings.topics.generationRequests] ?? []);
    const count = this.settings.requestPartitions;
    const description = `partitions [${[...partitions].sort((a, b) => a - b).join(',')}] of ${count}`;
    this.logger.info({ partitions: [...partitions] }, `owning the nodes of ${description}`);
    this.loop.enqueue({
      kind: 'ownership',
      owns: (nodeId) => partitions.has(partitionForKey(nodeId, count)),
      description,
    });
  }

  private async deadLetter(
    message: IncomingMessage,
    issues: readonly { path: string; message: string }[],
  ): Promise<void> {
    const reason = issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ');
    this.logger.warn(
      { topic: message.topic, offset: message.offset, reason },
      'unreadable event sent to the DLQ',
    );
    await this.deadLetters.send(`${message.topic}.dlq`, [
      {
        key: message.key,
        value: message.value,
        headers: {
          ...message.headers,
          'policygen-error': reason,
          'policygen-origin': `${message.topic}/${message.partition}/${message.offset}`,
        },
      },
    ]);
  }
}
