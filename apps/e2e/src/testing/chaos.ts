import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { createClient } from 'redis';
import type { MessageConsumer, MessagingAdmin } from '@policygen/messaging';
import { createKafkaMessaging } from '@policygen/messaging';
import type { RestartableServer } from '@policygen/testing-infra';
import {
  eventually,
  startRestartableKafka,
  startRestartablePostgres,
  startRestartableRedis,
} from '@policygen/testing-infra';
import type { Entity, GeneratorProcess, ServiceProcess } from './pipeline';
import { generateWithCli, Pipeline } from './pipeline';

/**
 * The chaos suite's rig: a pipeline (config-service, generator, distribution-service, relays root
 * and relay-eu) on a Kafka, a Redis and a Postgres of its own, which the injector stops, kills,
 * flushes and starts again while a steady stream of changes goes through.
 */

export const FAULT_KINDS = [
  'kill-generator',
  'kill-distribution',
  'kill-relay',
  'kill-config-service',
  'stop-kafka',
  'restart-redis',
  'flush-redis',
  'restart-postgres',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface PlannedFault {
  readonly kind: FaultKind;
  /** Quiet time before it, under the stream of changes. */
  readonly afterMs: number;
  /** How long the component stays down before it is started again (a flush has none). */
  readonly downMs: number;
}

/** A plan of `count` faults: what, after how long, down for how long. */
export function faultPlans(count: number, maxDownMs: number): fc.Arbitrary<PlannedFault[]> {
  return fc.array(
    fc.record({
      kind: fc.constantFrom(...FAULT_KINDS),
      afterMs: fc.integer({ min: 1_000, max: 6_000 }),
      downMs: fc.integer({ min: 0, max: maxDownMs }),
    }),
    { minLength: count, maxLength: count },
  );
}

/** The plan a seed gives: the same seed, the same faults at the same moments. */
export function planFaults(seed: number, count: number, maxDownMs: number): PlannedFault[] {
  const [plan] = fc.sample(faultPlans(count, maxDownMs), { seed, numRuns: 1 });
  return plan ?? [];
}

export interface InjectedFault extends PlannedFault {
  readonly target: string;
  /** Milliseconds since the run began: when it was injected, healed, and the pipeline recovered. */
  readonly injectedAt: number;
  readonly healedAt: number;
  readonly recoveredAt: number;
  /** The first revision the config API acknowledged after the fault was healed. */
  readonly revisionAtHeal: number;
}

/** What the stream of changes saw: the acknowledged steps, and every answer that was not a 200. */
export interface StreamRecord {
  readonly acknowledged: Map<number, { readonly revision: number; readonly nodeId: string }>;
  readonly answers: Map<string, number>;
  lastRevision: number;
}

const PROBE_PROPERTY = 'chaos_step';

export class ChaosRig {
  readonly started = Date.now();
  readonly injected: InjectedFault[] = [];
  readonly stream: StreamRecord = { acknowledged: new Map(), answers: new Map(), lastRevision: 0 };
  readonly configRevisions = new Map<number, number>();
  relays = new Map<string, ServiceProcess>();
  private nodes: Entity[] = [];
  private tokens = new Map<string, string>();
  private streaming: Promise<void> | undefined;
  private streamStop = false;
  private step = 0;
  private observer: MessageConsumer | undefined;
  private admin: MessagingAdmin | undefined;

  private constructor(
    readonly pipeline: Pipeline,
    readonly kafka: RestartableServer,
    readonly redis: RestartableServer,
    readonly postgres: RestartableServer,
    private readonly redisUrl: string,
    private readonly say: (line: string) => void,
  ) {}

  static async start(say: (line: string) => void): Promise<ChaosRig> {
    const [kafka, redis, postgres] = await Promise.all([
      startRestartableKafka(),
      startRestartableRedis(),
      startRestartablePostgres({ durable: true }),
    ]);
    const pipeline = new Pipeline({
      kafkaBrokers: [...kafka.brokers],
      redisUrl: redis.url,
      databaseUrl: postgres.url,
    });
    const rig = new ChaosRig(pipeline, kafka.server, redis.server, postgres.server, redis.url, say);
    await pipeline.start();
    await pipeline.startGenerator('g1');
    const distribution = await pipeline.startDistribution();
    const root = await pipeline.startRelay('root', distribution.url);
    rig.relays.set('root', root);
    rig.relays.set('relay-eu', await pipeline.startRelay('relay-eu', root.url));
    rig.stream.lastRevision = await pipeline.importDemoFleet();
    const fleet = (await pipeline.exportFleet()) as { nodes: Entity[] };
    rig.nodes = fleet.nodes.filter((node) => node['state'] !== 'ignored');
    for (const node of rig.nodes)
      rig.tokens.set(String(node['id']), await pipeline.nodeToken(String(node['id'])));
    await rig.observeConfigChanges([...kafka.brokers]);
    await rig.recovered(rig.stream.lastRevision, 120_000);
    return rig;
  }

  elapsed(): number {
    return Date.now() - this.started;
  }

  /** The node whose bundle every change touches: its revision at a relay says how far the relay is. */
  get probe(): string {
    return String(this.nodes[0]?.['id']);
  }

  /** Starts a change every `intervalMs`: a property on the probe node and one of its own on another node. */
  startChanges(intervalMs = 300): void {
    this.streamStop = false;
    this.streaming = (async () => {
      while (!this.streamStop) {
        this.step += 1;
        await this.change(this.step);
        await new Promise((resolve) => setTimeout(resolve, intervalMs));
      }
    })();
  }

  async stopChanges(): Promise<void> {
    this.streamStop = true;
    await this.streaming;
  }

  private async change(step: number): Promise<void> {
    const probe = this.nodes[0] as Entity;
    const other = this.nodes[1 + (step % (this.nodes.length - 1))] as Entity;
    probe['properties'] = { ...(probe['properties'] as Entity), [PROBE_PROPERTY]: step };
    other['properties'] = { ...(other['properties'] as Entity), [`chaos_${step}`]: step };
    let answer: string;
    try {
      const response = await fetch(`${this.pipeline.configUrl}/api/v1/changes`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${this.pipeline.adminToken}`,
          'x-policygen-reason': `chaos step ${step}`,
        },
        body: JSON.stringify({ upsert: { nodes: [probe, other] } }),
        signal: AbortSignal.timeout(10_000),
      });
      answer = String(response.status);
      if (response.status === 200) {
        const { revision } = (await response.json()) as { revision: number };
        this.stream.acknowledged.set(step, { revision, nodeId: String(other['id']) });
        this.stream.lastRevision = Math.max(this.stream.lastRevision, revision);
        return;
      }
      await response.arrayBuffer();
    } catch (error) {
      answer = (error as Error).name === 'TimeoutError' ? 'timeout' : 'unreachable';
    }
    this.stream.answers.set(answer, (this.stream.answers.get(answer) ?? 0) + 1);
  }

  /** Runs one fault: injects it, waits its down time, heals it, and waits until the pipeline has recovered. */
  async inject(fault: PlannedFault, recoveryTimeoutMs = 180_000): Promise<InjectedFault> {
    await new Promise((resolve) => setTimeout(resolve, fault.afterMs));
    const injectedAt = this.elapsed();
    const { target, heal } = await this.break(fault.kind);
    this.say(`[chaos] +${seconds(injectedAt)} ${fault.kind} (${target}), down ${seconds(fault.downMs)}`);
    // A flush has nothing to heal: the store is up, only emptied.
    if (fault.kind !== 'flush-redis') await new Promise((resolve) => setTimeout(resolve, fault.downMs));
    await heal();
    const healedAt = this.elapsed();
    // Recovered: a change made after the heal has reached every relay.
    const before = this.stream.lastRevision;
    await eventually(() => this.stream.lastRevision > before, {
      what: `a change acknowledged after ${fault.kind} was healed`,
      timeoutMs: recoveryTimeoutMs,
      intervalMs: 50,
    });
    const revisionAtHeal = this.stream.lastRevision;
    await this.recovered(revisionAtHeal, recoveryTimeoutMs);
    const done: InjectedFault = {
      ...fault,
      target,
      injectedAt,
      healedAt,
      recoveredAt: this.elapsed(),
      revisionAtHeal,
    };
    this.say(
      `[chaos] +${seconds(done.healedAt)} healed ${fault.kind}; recovered in ${seconds(done.recoveredAt - done.healedAt)} (revision ${revisionAtHeal} at every relay)`,
    );
    this.injected.push(done);
    return done;
  }

  private async break(kind: FaultKind): Promise<{ target: string; heal: () => Promise<unknown> }> {
    const { pipeline } = this;
    switch (kind) {
      case 'kill-generator': {
        const generator = pipeline.generators[0];
        generator?.process.kill();
        return { target: 'generator g1 (SIGKILL)', heal: () => pipeline.startGenerator('g1') };
      }
      case 'kill-distribution':
        pipeline.distribution?.process.kill();
        return { target: 'distribution-service (SIGKILL)', heal: () => pipeline.startDistribution() };
      case 'kill-relay': {
        const relayId = (this.injected.length + this.stream.lastRevision) % 2 === 0 ? 'root' : 'relay-eu';
        this.relays.get(relayId)?.process.kill();
        const parent = relayId === 'root' ? pipeline.distribution?.url : this.relays.get('root')?.url;
        return {
          target: `relay ${relayId} (SIGKILL)`,
          heal: async () => this.relays.set(relayId, await pipeline.startRelay(relayId, String(parent))),
        };
      }
      case 'kill-config-service':
        pipeline.configService?.kill();
        return { target: 'config-service (SIGKILL)', heal: () => pipeline.startConfigService() };
      case 'stop-kafka':
        await this.kafka.stop();
        return { target: 'Kafka broker (stopped)', heal: () => this.kafka.start() };
      case 'restart-redis':
        await this.redis.kill();
        return { target: 'Redis (SIGKILL, comes back empty)', heal: () => this.redis.start() };
      case 'flush-redis':
        await flushRedis(this.redisUrl);
        return { target: 'Redis (FLUSHALL)', heal: async () => undefined };
      case 'restart-postgres':
        await this.postgres.kill();
        return { target: 'Postgres (SIGKILL)', heal: () => this.postgres.start() };
    }
  }

  /** Every relay serves the probe node at `revision` or later. */
  async recovered(revision: number, timeoutMs: number): Promise<void> {
    const token = this.tokens.get(this.probe) as string;
    await eventually(
      async () => {
        for (const relay of this.relays.values()) {
          const listing = await this.listing(relay, this.probe, token);
          if (!listing || listing.revision < revision) return false;
        }
        return true;
      },
      {
        what: `every relay serving ${this.probe} at revision ${revision} or later`,
        timeoutMs,
        intervalMs: 250,
      },
    );
  }

  private async listing(
    relay: ServiceProcess,
    nodeId: string,
    token: string,
  ): Promise<{ hash: string; revision: number } | null> {
    try {
      const response = await fetch(`${relay.url}/nodes/${encodeURIComponent(nodeId)}/policies`, {
        headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
        signal: AbortSignal.timeout(5_000),
      });
      if (response.status !== 200) {
        await response.arrayBuffer();
        return null;
      }
      return (await response.json()) as { hash: string; revision: number };
    } catch {
      return null;
    }
  }

  /** Every revision's change event, as a consumer of the change log sees them (duplicates counted). */
  private async observeConfigChanges(brokers: string[]): Promise<void> {
    // The broker's outages are the point here: the client's complaints about them are not news.
    const messaging = createKafkaMessaging({ brokers, log: () => undefined });
    this.admin = await messaging.createAdmin();
    this.observer = await messaging.createConsumer({
      groupId: `chaos-observer-${randomBytes(4).toString('hex')}`,
      topics: [this.pipeline.topics.configChanges],
      fromBeginning: true,
    });
    await this.observer.start(async (batch) => {
      for (const message of batch.messages) {
        if (message.tombstone) continue;
        const { revision } = JSON.parse(message.value.toString('utf8')) as { revision: number };
        this.configRevisions.set(revision, (this.configRevisions.get(revision) ?? 0) + 1);
      }
    });
  }

  /**
   * The end state the suite asserts, once every fault is healed and the changes stopped: what
   * differs from it, as a list of findings (empty when the pipeline ended where it should).
   */
  async findings(timeoutMs = 180_000): Promise<string[]> {
    const { pipeline } = this;
    const finalRevision = await pipeline.revision();
    await this.recovered(finalRevision, timeoutMs);
    const findings: string[] = [];
    const groups = [`generator-${pipeline.id}`, `distribution-${pipeline.id}`];
    await eventually(
      async () => {
        for (const group of groups)
          for (const { lag } of await (this.admin as MessagingAdmin).consumerLag(group))
            if (lag > 0) return false;
        return true;
      },
      { what: 'the generator and the distribution-service with no lag', timeoutMs: 60_000 },
    );
    await eventually(() => this.configRevisions.has(finalRevision), {
      what: `the change event of revision ${finalRevision} observed`,
      timeoutMs: 60_000,
    });

    // Each consumer of the change log has applied the last revision: none stopped short of it.
    const generator = await pipeline.generatorStatus(pipeline.generators[0] as GeneratorProcess);
    if (generator.revision !== finalRevision)
      findings.push(
        `the generator is at revision ${generator.revision}, the configuration at ${finalRevision}`,
      );
    const distribution = (await (await fetch(`${pipeline.distribution?.url}/status`)).json()) as {
      revision: number;
    };
    if (distribution.revision !== finalRevision)
      findings.push(
        `the distribution-service is at revision ${distribution.revision}, the configuration at ${finalRevision}`,
      );

    for (let revision = 1; revision <= finalRevision; revision++)
      if (!this.configRevisions.has(revision)) findings.push(`no change event for revision ${revision}`);

    // A bundle published twice (a redelivery, a regeneration after a restart or a flush) is a
    // recognisable duplicate: same node, same revision, same hash.
    const bundles = new Map<string, string>();
    for (const event of pipeline.events.bundles) {
      if (event.type !== 'node.bundle') continue;
      const key = `${event.nodeId}@${event.revision}`;
      const seen = bundles.get(key);
      if (seen !== undefined && seen !== event.hash)
        findings.push(`two different bundles of ${event.nodeId} at revision ${event.revision}`);
      bundles.set(key, event.hash);
    }

    const fleet = (await pipeline.exportFleet()) as { nodes: Entity[] };
    const exported = new Map(fleet.nodes.map((node) => [String(node['id']), node]));
    for (const [step, { revision, nodeId }] of this.stream.acknowledged) {
      const properties = (exported.get(nodeId)?.['properties'] ?? {}) as Entity;
      if (properties[`chaos_${step}`] !== step)
        findings.push(`step ${step}, acknowledged at revision ${revision}, is not in the configuration`);
    }

    const expected = generateWithCli(fleet);
    for (const [relayId, relay] of this.relays) {
      let served = 0;
      for (const [nodeId, hash] of expected) {
        const listing = await this.listing(relay, nodeId, this.tokens.get(nodeId) ?? '');
        if (!listing) continue;
        served++;
        if (listing.hash !== hash)
          findings.push(
            `relay ${relayId} serves ${nodeId} as ${listing.hash}, policygen generate says ${hash}`,
          );
      }
      const status = (await (await fetch(`${relay.url}/status`)).json()) as { nodes: number };
      if (relayId === 'root' && served !== expected.size)
        findings.push(`relay root serves ${served} of the ${expected.size} nodes`);
      if (served !== status.nodes || served === 0)
        findings.push(`relay ${relayId} served ${served} bundles, its status says ${status.nodes} nodes`);
    }
    return findings;
  }

  /** What was injected and when, and how long each recovery took. */
  report(): string {
    const rows = this.injected.map(
      (fault, index) =>
        `  ${String(index + 1).padStart(2)}  +${seconds(fault.injectedAt).padStart(7)}  ${fault.kind.padEnd(20)} ${fault.target.padEnd(36)} down ${seconds(fault.healedAt - fault.injectedAt).padStart(7)}  recovered in ${seconds(fault.recoveredAt - fault.healedAt)}`,
    );
    const answers = [...this.stream.answers].map(([answer, count]) => `${answer}×${count}`).join(', ');
    const duplicates = [...this.configRevisions.values()].filter((count) => count > 1).length;
    const bundleEvents = this.pipeline.events.bundles.filter((event) => event.type === 'node.bundle');
    const distinctBundles = new Set(bundleEvents.map((event) => `${event.nodeId}@${event.revision}`)).size;
    return [
      `chaos: ${this.injected.length} fault(s), ${this.stream.acknowledged.size} change(s) acknowledged (last revision ${this.stream.lastRevision}); other answers: ${answers || 'none'}; change events delivered more than once to the observer: ${duplicates}; bundle events: ${bundleEvents.length}, of which ${bundleEvents.length - distinctBundles} recognisable duplicates`,
      ...rows,
    ].join('\n');
  }

  async stop(): Promise<void> {
    await this.stopChanges();
    await this.observer?.close().catch(() => undefined);
    await this.admin?.close().catch(() => undefined);
    await this.pipeline.stop().catch(() => undefined);
    await Promise.allSettled([this.kafka.close(), this.redis.close(), this.postgres.close()]);
  }
}

async function flushRedis(url: string): Promise<void> {
  const client = createClient({ url });
  await client.connect();
  try {
    await client.flushAll();
  } finally {
    await client.close();
  }
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
