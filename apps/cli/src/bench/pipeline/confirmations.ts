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
 * The nodes of an import still to arrive at its revision or later, kept up to date as
 * confirmations come in: a poll reads a count instead of scanning every node.
 */
export class ImportTracker {
  private readonly missing: Set<string>;
  /** Each arrived node's confirmation time (of the confirmation that made it arrive). */
  readonly arrivals = new Map<string, number>();

  constructor(
    readonly revision: number,
    expected: Iterable<string>,
  ) {
    this.missing = new Set(expected);
  }

  get missingCount(): number {
    return this.missing.size;
  }

  get arrivedCount(): number {
    return this.arrivals.size;
  }

  /** The nodes not arrived yet. */
  missingNodes(): IterableIterator<string> {
    return this.missing.values();
  }

  arrived(nodeId: string, confirmation: Confirmation): void {
    if (confirmation.revision < this.revision || !this.missing.delete(nodeId)) return;
    this.arrivals.set(nodeId, confirmation.confirmedAt);
  }
}

/** A change set to follow: its revision and the nodes whose bundle it changes. */
export interface TrackedChangeSet {
  readonly revision: number;
  readonly nodes: readonly string[];
}

/**
 * Change sets, each counted wholly arrived once every node of it was confirmed at its revision
 * or later; a confirmation settles the node in every change set waiting for it at or below its
 * revision, through an index from node to those change sets.
 */
export class ChangeSetTracker {
  private readonly missing: number[];
  private readonly waiting = new Map<string, { set: number; revision: number }[]>();
  private complete = 0;

  constructor(changeSets: readonly TrackedChangeSet[]) {
    this.missing = changeSets.map(() => 0);
    changeSets.forEach((changeSet, set) => {
      for (const nodeId of new Set(changeSet.nodes)) {
        const entries = this.waiting.get(nodeId);
        const entry = { set, revision: changeSet.revision };
        if (entries) entries.push(entry);
        else this.waiting.set(nodeId, [entry]);
        this.missing[set] = (this.missing[set] ?? 0) + 1;
      }
      if (this.missing[set] === 0) this.complete++;
    });
  }

  /** Change sets wholly arrived. */
  get completeCount(): number {
    return this.complete;
  }

  /** Nodes of the change set (by its position) still to arrive. */
  missingOf(set: number): number {
    return this.missing[set] ?? 0;
  }

  arrived(nodeId: string, confirmation: Confirmation): void {
    const entries = this.waiting.get(nodeId);
    if (!entries) return;
    const still = entries.filter((entry) => {
      if (entry.revision > confirmation.revision) return true;
      const left = (this.missing[entry.set] ?? 0) - 1;
      this.missing[entry.set] = left;
      if (left === 0) this.complete++;
      return false;
    });
    if (still.length === 0) this.waiting.delete(nodeId);
    else if (still.length < entries.length) this.waiting.set(nodeId, still);
  }
}

/**
 * Every `distribution.confirmed` of one relay, per node, as the distribution-service publishes them
 * (`policygen.distribution.events.v1`): what the benchmark counts a node "on the relay" by.
 */
export class ConfirmationLog {
  private readonly byNode = new Map<string, Confirmation[]>();
  private consumer: MessageConsumer | undefined;
  private received = 0;
  private readonly trackers: { arrived(nodeId: string, confirmation: Confirmation): void }[] = [];

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
    for (const tracker of this.trackers) tracker.arrived(event.nodeId, confirmation);
  }

  /** Follows an import's arrival from now on, counting what was confirmed already. */
  trackImport(revision: number, expected: Iterable<string>): ImportTracker {
    return this.follow(new ImportTracker(revision, expected));
  }

  /** Follows change sets' arrival from now on, counting what was confirmed already. */
  trackChangeSets(changeSets: readonly TrackedChangeSet[]): ChangeSetTracker {
    return this.follow(new ChangeSetTracker(changeSets));
  }

  /** Stops counting arrivals for a tracker (its figures stay). */
  untrack(tracker: ImportTracker | ChangeSetTracker): void {
    const index = this.trackers.indexOf(tracker);
    if (index >= 0) this.trackers.splice(index, 1);
  }

  private follow<Tracker extends ImportTracker | ChangeSetTracker>(tracker: Tracker): Tracker {
    // In arrival order, so that an import's arrival times are those a live tracker would have seen.
    const earlier = [...this.byNode].flatMap(([nodeId, list]) =>
      list.map((confirmation) => ({ nodeId, confirmation })),
    );
    earlier.sort((a, b) => a.confirmation.confirmedAt - b.confirmation.confirmedAt);
    for (const { nodeId, confirmation } of earlier) tracker.arrived(nodeId, confirmation);
    this.trackers.push(tracker);
    return tracker;
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
