import type { MessageProducer } from '@policygen/messaging';
import type { ConfigStore, OutboxMessage } from './config-store';

/**
 * Sends the outbox to the bus, oldest first. What the broker acknowledged is marked published by
 * the next commit's own statement (`takeMarks`), or on its own once a whole run passed without a
 * commit to carry it (`markIdle`). The messages this process's commits wrote are sent as the
 * commits gave them (`committed`), without reading them back, while they follow what was sent
 * without a gap; a gap (another instance committed in between, an id a failed insert took) or a
 * run with none of them reads the outbox. A crash before the mark sends those messages again on
 * the next start: a change event carries its revision, so a consumer recognises one it has seen.
 * Nothing committed is ever lost, since the message was written in the transaction of its change.
 */
export class OutboxPublisher {
  /** The greatest id sent: later reads skip what was sent and is not marked yet. */
  private sentThrough = 0;
  /** Messages this process's commits wrote and it has not sent, in id order. */
  private fresh: OutboxMessage[] = [];
  /** Reads of the outbox so far (a run that sends what its commits gave reads nothing). */
  private readsMade = 0;
  /** Sent, not marked yet: by the last run, and by the runs before it. */
  private sentLastRun: number[] = [];
  private sentBefore: number[] = [];

  constructor(
    private readonly store: Pick<ConfigStore, 'unpublished' | 'markPublished'>,
    private readonly producer: MessageProducer,
    private readonly batchSize = 500,
    /** Told of each mark made on its own, not carried by a commit: how many messages it marked. */
    private readonly onMarkedAlone: (count: number) => void = () => undefined,
  ) {}

  /** The messages commits of this process wrote (`CommittedChange.outboxMessage`), to send without a read. */
  committed(messages: readonly OutboxMessage[]): void {
    for (const message of messages) if (message.id > this.sentThrough) this.fresh.push(message);
    // A process commits one group at a time, so ids come in order; a caller that did not is put right.
    for (let index = 1; index < this.fresh.length; index++)
      if ((this.fresh[index - 1] as OutboxMessage).id >= (this.fresh[index] as OutboxMessage).id) {
        this.fresh.sort((a, b) => a.id - b.id);
        break;
      }
  }

  /** How many times the outbox was read. */
  get reads(): number {
    return this.readsMade;
  }

  /**
   * Publishes every message waiting when called: those the commits gave while they follow what was
   * sent, else what a read of the outbox finds. Resolves with how many were sent.
   */
  async publishPending(): Promise<number> {
    await this.markIdle();
    let sent = 0;
    let sentGiven = false;
    for (;;) {
      const given = this.followingFresh();
      const fromCommits = given.length > 0;
      // All that the commits gave is sent: what other instances committed after it waits for a
      // run without any (or for the gap it leaves before this process's next commit).
      if (!fromCommits && sentGiven && this.fresh.length === 0) return sent;
      const messages = fromCommits ? given : await this.read();
      if (messages.length === 0) return sent;
      // One part per topic, in outbox order (a topic's messages keep their order), in one request.
      const topics = [...new Set(messages.map((message) => message.topic))];
      await this.producer.sendAll(
        topics.map((topic) => ({
          topic,
          messages: messages
            .filter((message) => message.topic === topic)
            .map((message) => ({ key: message.key, value: message.value })),
        })),
      );
      for (const message of messages) this.sentLastRun.push(message.id);
      this.sentThrough = messages[messages.length - 1]?.id ?? this.sentThrough;
      this.dropSentFresh();
      sent += messages.length;
      if (fromCommits) sentGiven = true;
      // A short batch was all there was when it was read: what came since is another call's.
      else if (messages.length < this.batchSize) return sent;
    }
  }

  private read(): Promise<OutboxMessage[]> {
    this.readsMade++;
    return this.store.unpublished(this.batchSize, this.sentThrough);
  }

  /** The next batch of the messages the commits gave, from the one after the last sent, while their ids follow without a gap. */
  private followingFresh(): OutboxMessage[] {
    this.dropSentFresh();
    const batch: OutboxMessage[] = [];
    for (const message of this.fresh) {
      if (message.id !== this.sentThrough + 1 + batch.length || batch.length === this.batchSize) break;
      batch.push(message);
    }
    return batch;
  }

  private dropSentFresh(): void {
    let sent = 0;
    while (sent < this.fresh.length && (this.fresh[sent] as OutboxMessage).id <= this.sentThrough) sent++;
    if (sent > 0) this.fresh = this.fresh.slice(sent);
  }

  /** How many messages were sent and are not marked yet. */
  get unmarked(): number {
    return this.sentBefore.length + this.sentLastRun.length;
  }

  /** The ids sent and not marked yet, for a commit to mark; `giveBack` them if it fails. */
  takeMarks(): number[] {
    const ids = this.sentBefore.length === 0 ? this.sentLastRun : [...this.sentBefore, ...this.sentLastRun];
    this.sentBefore = [];
    this.sentLastRun = [];
    return ids;
  }

  /** Marks every message sent so far (a clean stop: the next start sends nothing twice). */
  async markSent(): Promise<void> {
    await this.markAlone(this.takeMarks());
  }

  /** Marks a commit took and could not write: the next commit or run marks them. */
  giveBack(ids: readonly number[]): void {
    this.sentBefore.push(...ids);
  }

  /**
   * Marks on their own what no commit carried since the run before last: when commits stop, sent
   * messages are marked within two runs. Should the mark fail, the ids stay for the next try.
   */
  private async markIdle(): Promise<void> {
    const stale = this.sentBefore;
    this.sentBefore = this.sentLastRun;
    this.sentLastRun = [];
    await this.markAlone(stale);
  }

  /** Marks `ids` in a round trip of their own; should that fail, they wait for the next mark. */
  private async markAlone(ids: readonly number[]): Promise<void> {
    if (ids.length === 0) return;
    try {
      await this.store.markPublished(ids);
    } catch (error) {
      this.giveBack(ids);
      throw error;
    }
    this.onMarkedAlone(ids.length);
  }
}
