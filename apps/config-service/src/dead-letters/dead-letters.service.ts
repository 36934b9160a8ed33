import { Inject, Injectable, Logger } from '@nestjs/common';
import type { OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { deadLetterTopicOf } from '@policygen/sdk';
import type {
  DeadLetterPage,
  MessageProducer,
  Messaging,
  MessagingAdmin,
  ReplayOutcome,
} from '@policygen/messaging';
import { DeadLetterArchive } from '@policygen/messaging';
import type { ServiceShellOptions } from '@policygen/service-kit';
import { SERVICE_SHELL_OPTIONS } from '@policygen/service-kit';
import { Gauge } from 'prom-client';
import { MESSAGING, PIPELINE_SETTINGS } from '../app/tokens';
import { notFound, unavailable } from '../http/api-errors';
import type { PipelineSettings } from '../pipeline/pipeline.service';

/** A dead-letter topic at a glance. */
export interface DeadLetterTopic {
  readonly topic: string;
  /** The topic its letters came from, where a replay sends them. */
  readonly origin: string;
  /** Letters not replayed yet. */
  readonly depth: number;
  readonly total: number;
}

/** The dead-letter topics are read again at most this often for the depth gauge. */
const FRESH_MS = 5_000;

/**
 * The deployment's dead-letter topics (`<topic>.dlq` of each of its topics) for an operator: what
 * is in them, how many wait (`policygen_dlq_depth`), and their replay (`DeadLetterArchive`).
 */
@Injectable()
export class DeadLettersService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(DeadLettersService.name);
  private admin: MessagingAdmin | null = null;
  private producer: MessageProducer | null = null;
  private archive: DeadLetterArchive | null = null;
  private refreshed: { readonly at: number; readonly value: Promise<string[]> } | null = null;
  /** Replays one at a time: two at once could both republish a letter before either marks it. */
  private replaying: Promise<unknown> = Promise.resolve();

  constructor(
    @Inject(MESSAGING) private readonly messaging: Messaging,
    @Inject(PIPELINE_SETTINGS) private readonly settings: PipelineSettings,
    @Inject(SERVICE_SHELL_OPTIONS) shell: ServiceShellOptions,
  ) {
    const depth: Gauge<'topic'> = new Gauge({
      name: 'policygen_dlq_depth',
      help: 'Messages in a dead-letter topic not replayed yet',
      labelNames: ['topic'],
      registers: [shell.registry],
      collect: async () => {
        const topics = await this.refreshAll().catch((error: unknown) => {
          this.logger.warn(`dead-letter topics not read: ${(error as Error).message}`);
          return null;
        });
        if (!topics) return;
        depth.reset();
        for (const topic of topics) depth.set({ topic }, this.archive?.depth(topic) ?? 0);
      },
    });
  }

  async onModuleInit(): Promise<void> {
    this.admin = await this.messaging.createAdmin();
    this.producer = await this.messaging.createProducer({ idempotent: true });
    this.archive = new DeadLetterArchive(this.admin, this.producer);
  }

  async onModuleDestroy(): Promise<void> {
    await this.producer?.close();
    await this.admin?.close();
  }

  /** Every dead-letter topic of the deployment that exists, with its depth. */
  async topics(): Promise<DeadLetterTopic[]> {
    const topics = await this.refreshAll(true);
    return topics.map((topic) => {
      const page = this.ready().list(topic, { limit: 0 });
      return { topic, origin: topic.slice(0, -'.dlq'.length), depth: page.depth, total: page.total };
    });
  }

  async list(name: string, after: number | undefined, limit: number): Promise<DeadLetterPage> {
    const topic = await this.existing(name);
    await this.bus(() => this.ready().refresh(topic));
    return this.ready().list(topic, { limit, ...(after === undefined ? {} : { after }) });
  }

  async replay(name: string, offsets: readonly number[] | undefined, by: string): Promise<ReplayOutcome> {
    const topic = await this.existing(name);
    const run = this.replaying.then(() =>
      this.bus(() => this.ready().replay(topic, { by, ...(offsets ? { offsets } : {}) })),
    );
    this.replaying = run.catch(() => undefined);
    const outcome = await run;
    this.logger.log(
      `replay of ${topic} by ${by}: ${outcome.replayed.length} replayed, ${outcome.skipped.length} skipped`,
    );
    this.refreshed = null;
    return outcome;
  }

  /** The dead-letter topic a name stands for (itself, or the topic whose `.dlq` it is), if the deployment has it. */
  private async existing(name: string): Promise<string> {
    const topic = name.endsWith('.dlq') ? name : deadLetterTopicOf(name);
    if (!this.deadLetterTopics().includes(topic)) throw notFound(`dead-letter topic ${topic}`);
    const exists = (await this.bus(() => this.adminOrFail().listTopics())).includes(topic);
    if (!exists) throw notFound(`dead-letter topic ${topic}`);
    return topic;
  }

  private deadLetterTopics(): string[] {
    return Object.values(this.settings.topics).map(deadLetterTopicOf);
  }

  private refreshAll(force = false): Promise<string[]> {
    if (!force && this.refreshed && Date.now() - this.refreshed.at < FRESH_MS) return this.refreshed.value;
    const value = this.bus(async () => {
      const existing = new Set(await this.adminOrFail().listTopics());
      const topics = this.deadLetterTopics().filter((topic) => existing.has(topic));
      for (const topic of topics) await this.ready().refresh(topic);
      return topics;
    });
    value.catch(() => {
      this.refreshed = null;
    });
    this.refreshed = { at: Date.now(), value };
    return value;
  }

  /** A bus that does not answer is a 503: the dead letters are there, only out of reach. */
  private async bus<T>(operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      if (error instanceof Error && 'getStatus' in error) throw error;
      throw unavailable(`the message bus does not answer: ${(error as Error).message}`);
    }
  }

  private adminOrFail(): MessagingAdmin {
    if (!this.admin) throw unavailable('the dead letters are not read yet: the service is starting');
    return this.admin;
  }

  private ready(): DeadLetterArchive {
    if (!this.archive) throw unavailable('the dead letters are not read yet: the service is starting');
    return this.archive;
  }
}
