import { randomBytes } from 'node:crypto';
import type { DistributionConfirmedEvent, TopicNames } from '@policygen/events';
import type { MessageConsumer, Messaging } from '@policygen/messaging';

/** One relay's confirmation that it serves a node's bundle, with the stage times it carries. */
export interface Confirmation {
  readonly revision: number;
  readonly hash: string;
  readonly committedAt: number;
  readonly generatedAt: number;
  readonly distributedAt: number;
  readonly confirmedAt: number;
}

/**
 * Every `distribution.confirmed` of one relay, per node, as the distribution-service publishes them
 * (`policygen.distribution.events.v1`): what the benchmark counts a node "on the relay" by.
 */
export class ConfirmationLog {
  private readonly byNode = new Map<string, Confirmation[]>();
  private consumer: MessageConsumer | undefined;
  private received = 0;

  constructor(private readonly relayId: string) {}

  async start(messaging: Messaging, topics: TopicNames): Promise<void> {
    this.consumer = await messaging.createConsumer({
      groupId: `bench-observer-${randomBytes(4).toString('hex')}`,
      topics: [topics.distributionEvents],
      fromBeginning: true,
    });
    await this.consumer.start(async (batch) => {
      for (const message of batch.messages) {
        const event = JSON.parse(message.value.toString('utf8')) as {
          type: string;
        } & DistributionConfirmedEvent;
        if (event.type === 'distribution.confirmed' && event.relayId === this.relayId) this.record(event);
      }
    });
  }

  async stop(): Promise<void> {
    await this.consumer?.close();
    this.consumer = undefined;
  }

  get count(): number {
    return this.received;
  }

  record(event: DistributionConfirmedEvent): void {
    this.received++;
    const confirmation: Confirmation = {
      revision: event.revision,
      hash: event.hash,
      committedAt: Date.parse(event.committedAt),
      generatedAt: Date.parse(event.generatedAt),
      distributedAt: Date.parse(event.distributedAt),
      confirmedAt: Date.parse(event.confirmedAt),
    };
    const list = this.byNode.get(event.nodeId);
    if (list) list.push(confirmation);
    else this.byNode.set(event.nodeId, [confirmation]);
  }

  /** The earliest confirmation of the node at `revision` or later (what made it current there). */
  firstAtOrAfter(nodeId: string, revision: number): Confirmation | undefined {
    let first: Confirmation | undefined;
    for (const confirmation of this.byNode.get(nodeId) ?? [])
      if (confirmation.revision >= revision && (!first || confirmation.confirmedAt < first.confirmedAt))
        first = confirmation;
    return first;
  }

  /** The node's confirmation at the highest revision (the bundle the relay serves now). */
  latest(nodeId: string): Confirmation | undefined {
    let latest: Confirmation | undefined;
    for (const confirmation of this.byNode.get(nodeId) ?? [])
      if (
        !latest ||
        confirmation.revision > latest.revision ||
        (confirmation.revision === latest.revision && confirmation.confirmedAt > latest.confirmedAt)
      )
        latest = confirmation;
    return latest;
  }
}
