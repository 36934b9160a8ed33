import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import type { OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { explainNode } from '@policygen/engine';
import type { NodeExplanation } from '@policygen/engine';
import { readPipelineSummary } from '@policygen/events';
import type { FailureQuery, NodeFailure, TopicNames } from '@policygen/events';
import type { GroupMember, MessageConsumer, Messaging } from '@policygen/messaging';
import type { GroupLag, ReadinessCheck, ServiceShellOptions } from '@policygen/service-kit';
import { BusMonitor, SERVICE_SHELL_OPTIONS, catchUpCheck, evaluateReadiness } from '@policygen/service-kit';
import { Counter, Gauge } from 'prom-client';
import { CONFIG_STORE, MESSAGING, PIPELINE_SETTINGS } from '../app/tokens';
import type { ConfigStore } from '@policygen/store';
import { OutboxService } from '../outbox/outbox.service';
import { ConfigStateService } from '../state/config-state.service';
import type { LagReport, NodeStatus, RelaySync, RevisionProgress } from './pipeline-view';
import { PipelineView } from './pipeline-view';

export interface PipelineSettings {
  readonly topics: TopicNames;
  readonly partitions: number;
  readonly generatorGroup: string;
}

export interface PipelineStatus {
  readonly revisions: {
    readonly committed: number;
    readonly generated: number;
    readonly distributed: number;
  };
  readonly failingNodes: number;
  readonly failuresByCode: Readonly<Record<string, number>>;
  readonly throughput: ReturnType<PipelineView['throughput']>;
  readonly relays: readonly RelaySync[];
  readonly consumers: readonly {
    readonly group: string;
    readonly topic: string;
    readonly lag: number;
    readonly partitions: readonly { readonly partition: number; readonly lag: number }[];
  }[];
  readonly generators: readonly {
    readonly memberId: string;
    readonly clientId: string;
    readonly partitions: readonly number[];
  }[];
  readonly ready: boolean;
  readonly reasons: readonly string[];
}

/** A page of `GET /api/v1/failures`. */
export interface FailurePage {
  readonly total: number;
  readonly items: NodeFailure[];
  readonly next: string | null;
}

/** Other config-service instances' followers: each instance reads the events in a group of its own. */
const FOLLOWER_GROUP_PREFIX = 'policygen-config-pipeline.';
/** A status is reused this long: every dashboard asks each second. */
const STATUS_FRESH_MS = 900;
/** The summaries are fetched at most this often (the bus holds a fetch to gather them). */
const SUMMARIES_GATHER_MS = 500;

/**
 * The pipeline seen from the config API: it follows the pipeline summaries — one per batch the
 * generators and the distribution-service published, never the per-node events — from the start of
 * their topic (in a consumer group of this process's own) into a `PipelineView`, and answers for
 * nodes, failures, revisions, relays, consumer groups and lag.
 */
@Injectable()
export class PipelineService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(PipelineService.name);
  private readonly groupId = `${FOLLOWER_GROUP_PREFIX}${randomUUID()}`;
  private readonly bus: BusMonitor;
  private consumer: MessageConsumer | null = null;
  private groups: string[] = [];
  private relayCounts: { readonly revision: number; readonly counts: Map<string, number> } | null = null;
  private statusCache: { readonly at: number; readonly value: Promise<PipelineStatus> } | null = null;
  private readonly summaries: Counter<'result'>;
  readonly view: PipelineView;
  /** Not ready until the events that were there at start are read. */
  readonly readiness: ReadinessCheck;
  /** Not ready while the bus does not answer (the outbox cannot be published). */
  readonly busReadiness: ReadinessCheck;

  constructor(
    @Inject(MESSAGING) private readonly messaging: Messaging,
    @Inject(PIPELINE_SETTINGS) private readonly settings: PipelineSettings,
    @Inject(SERVICE_SHELL_OPTIONS) private readonly shell: ServiceShellOptions,
    @Inject(ConfigStateService) private readonly state: ConfigStateService,
    @Inject(CONFIG_STORE) store: ConfigStore,
    @Inject(OutboxService) outbox: OutboxService,
  ) {
    this.view = new PipelineView((nodeId) => this.servingPath(nodeId));
    this.bus = new BusMonitor(messaging, () => this.groups, shell.registry);
    this.busReadiness = this.bus.readiness;
    this.readiness = catchUpCheck(
      'pipeline-events',
      async () => {
        if (!this.consumer) return Number.POSITIVE_INFINITY;
        const lags = await this.bus.consumerLag();
        return lags
          .filter((group) => group.group === this.groupId)
          .flatMap((group) => group.partitions)
          .reduce((sum, partition) => sum + partition.lag, 0);
      },
      'pipeline summaries',
    );
    this.summaries = new Counter({
      name: 'policygen_config_pipeline_summaries_total',
      help: 'Pipeline summaries this instance read, by type (generation.summary, distribution.summary), and those it could not read (unreadable)',
      labelNames: ['result'],
      registers: [shell.registry],
    });
    const changes = new Counter({
      name: 'policygen_config_changes_total',
      help: 'Change sets committed by this instance',
      registers: [shell.registry],
    });
    const revision: Gauge = new Gauge({
      name: 'policygen_config_revision',
      help: "The configuration's revision this instance holds",
      registers: [shell.registry],
      collect: () => revision.set(this.state.current.revision),
    });
    const backlog: Gauge = new Gauge({
      name: 'policygen_config_outbox_backlog',
      help: 'Committed change events not published to the bus yet',
      registers: [shell.registry],
      // The store counts what this instance sent until a commit marks it: not backlog.
      collect: async () =>
        backlog.set(
          await store
            .unpublishedCount()
            .then((count) => Math.max(0, count - outbox.sentUnmarked))
            .catch(() => Number.NaN),
        ),
    });
    state.onCommitted((count) => {
      changes.inc(count);
      this.view.changesCommitted(count);
    });
  }

  async onModuleInit(): Promise<void> {
    const { topics } = this.settings;
    const admin = await this.messaging.createAdmin();
    try {
      await admin.createTopics([{ name: topics.pipelineSummaries, partitions: 1 }]);
    } finally {
      await admin.close();
    }
    this.groups = [this.groupId];
    // The summaries only: one message per batch the generators and the distribution published,
    // never the per-node events (what the config-service spends does not grow with a change's nodes).
    const consumer = await this.messaging.createConsumer({
      groupId: this.groupId,
      topics: [topics.pipelineSummaries],
      fromBeginning: true,
      // Status and lag are read by people and dashboards: half a second late costs nothing, and
      // one fetch per half second instead of one per batch is most of what following them costs.
      gatherMs: SUMMARIES_GATHER_MS,
    });
    await consumer.start(async (batch) => {
      const now = Date.now();
      let unreadable = 0;
      for (const message of batch.messages) {
        const parsed = readPipelineSummary(message.value.toString('utf8'));
        if (!parsed.ok) {
          unreadable++;
          this.summaries.inc({ result: 'unreadable' });
          if (unreadable === 1)
            this.logger.warn(
              `an unreadable pipeline summary left out of the pipeline status: ${parsed.issues
                .slice(0, 3)
                .map((issue) => `${issue.path}: ${issue.message}`)
                .join('; ')}`,
            );
          continue;
        }
        const { summary } = parsed;
        if (summary.type === 'generation.summary') this.view.generationSummary(summary, now);
        else this.view.distributionSummary(summary, now);
        this.summaries.inc({ result: summary.type });
      }
      if (unreadable > 1)
        this.logger.warn(`${unreadable} unreadable pipeline summaries left out of the pipeline status`);
    });
    this.consumer = consumer;
  }

  async onModuleDestroy(): Promise<void> {
    await this.consumer?.close();
    await this.bus.close();
  }

  nodeStatus(nodeId: string): NodeStatus | null {
    const { revision, index } = this.state.current;
    return this.view.nodeStatus(nodeId, revision, index.nodes.has(nodeId));
  }

  explain(nodeId: string): NodeExplanation | null {
    const { revision, index } = this.state.current;
    return index.nodes.has(nodeId) ? explainNode(index, nodeId, { revision }) : null;
  }

  failures(query: FailureQuery): FailurePage {
    this.forgetRemovedNodes();
    return this.view.failures.page(query);
  }

  revisionProgress(revision: number): RevisionProgress | null {
    return this.view.revisionProgress(revision);
  }

  lag(windowSeconds: number): LagReport {
    return this.view.lag(windowSeconds);
  }

  status(): Promise<PipelineStatus> {
    if (this.statusCache && Date.now() - this.statusCache.at < STATUS_FRESH_MS) return this.statusCache.value;
    const value = this.buildStatus();
    value.catch(() => {
      this.statusCache = null;
    });
    this.statusCache = { at: Date.now(), value };
    return value;
  }

  private async buildStatus(): Promise<PipelineStatus> {
    this.forgetRemovedNodes();
    const { revision, index } = this.state.current;
    const [readiness, consumers, generators] = await Promise.all([
      evaluateReadiness(this.shell.readiness()),
      this.consumerGroups().catch((): GroupLag[] => []),
      this.generatorMembers().catch((): GroupMember[] => []),
    ]);
    const relays = [
      { relayId: 'root', parentId: null },
      ...[...index.relays.values()]
        .map((relay) => ({ relayId: relay.id, parentId: relay.policyServer }))
        .sort((a, b) => (a.relayId < b.relayId ? -1 : 1)),
    ];
    const counts = this.nodesPerRelay();
    const ownTopics = new Set<string>(Object.values(this.settings.topics));
    return {
      revisions: { committed: revision, ...this.view.revisions() },
      failingNodes: this.view.failures.count,
      failuresByCode: Object.fromEntries(this.view.failures.byCode()),
      throughput: this.view.throughput(),
      relays: this.view.relays(relays, (relayId) => counts.get(relayId) ?? 0),
      consumers: consumers.flatMap(({ group, partitions }) => {
        const byTopic = new Map<string, { partition: number; lag: number }[]>();
        for (const { topic, partition, lag } of partitions) {
          // Groups of other deployments on the same bus are theirs.
          if (!ownTopics.has(topic)) continue;
          const list = byTopic.get(topic) ?? [];
          list.push({ partition, lag });
          byTopic.set(topic, list);
        }
        return [...byTopic].map(([topic, list]) => ({
          group,
          topic,
          lag: list.reduce((sum, partition) => sum + partition.lag, 0),
          partitions: list,
        }));
      }),
      generators: generators.map((member) => ({
        memberId: member.memberId,
        clientId: member.clientId,
        partitions: [...(member.assignment[this.settings.topics.generationRequests] ?? [])].sort(
          (a, b) => a - b,
        ),
      })),
      ready: readiness.ready,
      reasons: Object.entries(readiness.checks)
        .filter(([, answer]) => !answer.ready || answer.degraded)
        .map(([name, answer]) => `${name}: ${answer.reason ?? (answer.ready ? 'degraded' : 'not ready')}`),
    };
  }

  /** Every group on the bus but other config-service instances' followers (theirs are their own business). */
  private async consumerGroups(): Promise<GroupLag[]> {
    this.groups = (await this.bus.listGroups()).filter(
      (group) => !group.startsWith(FOLLOWER_GROUP_PREFIX) || group === this.groupId,
    );
    return this.bus.consumerLag();
  }

  private generatorMembers(): Promise<GroupMember[]> {
    return this.bus.groupMembers(this.settings.generatorGroup);
  }

  private servingPath(nodeId: string): readonly string[] {
    const { index } = this.state.current;
    const node = index.nodes.get(nodeId);
    if (!node) return [];
    const chain: string[] = [];
    let relayId: string | undefined = node.policyServer;
    while (relayId !== undefined && relayId !== 'root' && !chain.includes(relayId)) {
      chain.push(relayId);
      relayId = index.relays.get(relayId)?.policyServer;
    }
    chain.push('root');
    return chain.reverse();
  }

  /** Nodes served by each relay (a relay serves its own nodes and those of the relays below it). */
  private nodesPerRelay(): Map<string, number> {
    const { revision, index } = this.state.current;
    if (this.relayCounts?.revision === revision) return this.relayCounts.counts;
    const counts = new Map<string, number>();
    for (const nodeId of index.nodes.keys())
      for (const relayId of this.servingPath(nodeId)) counts.set(relayId, (counts.get(relayId) ?? 0) + 1);
    this.relayCounts = { revision, counts };
    return counts;
  }

  private forgetRemovedNodes(): void {
    const { index } = this.state.current;
    this.view.forget(this.view.failures.nodeIds().filter((nodeId) => !index.nodes.has(nodeId)));
  }
}
