import type { GroupMember, Messaging, MessagingAdmin, PartitionLag } from '@policygen/messaging';
import { Gauge } from 'prom-client';
import type { Registry } from 'prom-client';
import type { ReadinessAnswer, ReadinessCheck } from './readiness';

export interface GroupLag {
  readonly group: string;
  readonly partitions: readonly PartitionLag[];
}

/** Answers are reused this long: a scrape and a probe at once ask the broker once. */
const FRESH_MS = 2_000;

/**
 * A service's view of the bus beyond its own consumers: whether the broker answers (readiness),
 * and how far behind the consumer groups it reads are (`policygen_kafka_consumer_lag`), through
 * one admin connection kept open.
 */
export class BusMonitor {
  private admin: Promise<MessagingAdmin> | null = null;
  private lags: { readonly at: number; readonly groups: string; readonly value: Promise<GroupLag[]> } | null =
    null;
  private reachable: { readonly at: number; readonly value: Promise<ReadinessAnswer> } | null = null;

  constructor(
    private readonly messaging: Messaging,
    /** The consumer groups whose lag this service reports (read each time: a service may add some). */
    private readonly groups: () => readonly string[],
    registry: Registry,
  ) {
    const gauge: Gauge<'group' | 'topic' | 'partition'> = new Gauge({
      name: 'policygen_kafka_consumer_lag',
      help: "Messages of a partition after the consumer group's committed offset",
      labelNames: ['group', 'topic', 'partition'],
      registers: [registry],
      collect: async () => {
        gauge.reset();
        for (const { group, partitions } of await this.consumerLag().catch(() => []))
          for (const { topic, partition, lag } of partitions)
            gauge.set({ group, topic, partition: String(partition) }, lag);
      },
    });
  }

  /** The lag of each watched group, per partition. */
  consumerLag(): Promise<GroupLag[]> {
    const groups = [...this.groups()];
    const key = groups.join('\n');
    if (this.lags && this.lags.groups === key && Date.now() - this.lags.at < FRESH_MS) return this.lags.value;
    const value = this.connect().then(async (admin) => {
      const result: GroupLag[] = [];
      for (const group of groups) result.push({ group, partitions: await admin.consumerLag(group) });
      return result;
    });
    value.catch(() => {
      this.lags = null;
    });
    this.lags = { at: Date.now(), groups: key, value };
    return value;
  }

  /** Every consumer group the bus knows. */
  async listGroups(): Promise<string[]> {
    return (await this.connect()).listGroups();
  }

  /** A group's live members and their partitions. */
  async groupMembers(groupId: string): Promise<GroupMember[]> {
    return (await this.connect()).groupMembers(groupId);
  }

  /** Not ready while the broker does not answer. */
  readonly readiness: ReadinessCheck = {
    name: 'bus',
    check: () => {
      if (this.reachable && Date.now() - this.reachable.at < FRESH_MS) return this.reachable.value;
      const value = this.connect()
        .then((admin) => admin.listTopics())
        .then(
          (): ReadinessAnswer => ({ ready: true }),
          (error: unknown): ReadinessAnswer => {
            this.admin = null;
            return { ready: false, reason: `the message bus does not answer: ${(error as Error).message}` };
          },
        );
      this.reachable = { at: Date.now(), value };
      return value;
    },
  };

  async close(): Promise<void> {
    const admin = this.admin;
    this.admin = null;
    if (admin) await (await admin.catch(() => null))?.close();
  }

  private connect(): Promise<MessagingAdmin> {
    if (!this.admin) {
      const admin = this.messaging.createAdmin();
      admin.catch(() => {
        if (this.admin === admin) this.admin = null;
      });
      this.admin = admin;
    }
    return this.admin;
  }
}
