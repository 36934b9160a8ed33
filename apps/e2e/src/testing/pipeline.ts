import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { Pool } from 'pg';
import { createClient } from 'redis';
import type {
  DistributionConfirmedEvent,
  DistributionEvent,
  NodeFetchedEvent,
  NodeBundleEvent,
  GenerationEvent,
  Topic,
  TopicNames,
} from '@policygen/events';
import { jsonSchemaOf, NODE_BUNDLES_TOPIC_CONFIG, TOPICS, topicsFor } from '@policygen/events';
import type { MessageConsumer } from '@policygen/messaging';
import { createKafkaMessaging } from '@policygen/messaging';
import { RedisBundleCache } from '@policygen/cache';
import { issueRelayToken } from '@policygen/distribution';
import { buildDemoFleet } from '@policygen/fleets';
import {
  eventually,
  freePort,
  getTestInfrastructure,
  ManagedProcess,
  type TestInfrastructure,
  workspaceRoot,
} from '@policygen/testing-infra';

/**
 * The real pipeline for end-to-end tests: the built config-service and generator-service run as
 * processes (`npm run build` bundles them) against the harness's Postgres, Kafka and Redis, each
 * pipeline in a namespace of its own (topics, database schema, Redis prefix, consumer group).
 */

const root = workspaceRoot();
function bundled(service: string): string {
  const file = join(root, 'dist', service, 'main.js');
  if (!existsSync(file))
    throw new Error(`${file} is missing: run \`npm run build\` (npm test does) before these tests`);
  return file;
}

/** Every event the pipeline published, checked against its published JSON Schema as it arrives. */
export class EventLog {
  readonly bundles: NodeBundleEvent[] = [];
  readonly results: GenerationEvent[] = [];
  readonly confirmations: DistributionConfirmedEvent[] = [];
  readonly fetches: NodeFetchedEvent[] = [];
  readonly schemaErrors: string[] = [];
  lastArrival = Date.now();
  private consumer: MessageConsumer | undefined;

  async start(topics: TopicNames, kafkaBrokers: readonly string[]): Promise<void> {
    const ajv = new Ajv2020({ strict: true, allErrors: true });
    addFormats(ajv);
    const validators = new Map<string, ReturnType<typeof ajv.compile>>([
      [topics.nodeBundles, ajv.compile(jsonSchemaOf(TOPICS.nodeBundles))],
      [topics.generationEvents, ajv.compile(jsonSchemaOf(TOPICS.generationEvents))],
      [topics.distributionEvents, ajv.compile(jsonSchemaOf(TOPICS.distributionEvents))],
    ]);
    const messaging = createKafkaMessaging({ brokers: kafkaBrokers, log: () => undefined });
    const admin = await messaging.createAdmin();
    await admin.createTopics([
      { name: topics.nodeBundles, partitions: 4, config: NODE_BUNDLES_TOPIC_CONFIG },
      { name: topics.generationEvents, partitions: 4 },
      { name: topics.distributionEvents, partitions: 4 },
    ]);
    await admin.close();
    this.consumer = await messaging.createConsumer({
      groupId: `observer-${randomBytes(4).toString('hex')}`,
      topics: [topics.nodeBundles, topics.generationEvents, topics.distributionEvents],
      fromBeginning: true,
    });
    await this.consumer.start(async (batch) => {
      this.lastArrival = Date.now();
      const validate = validators.get(batch.topic);
      for (const message of batch.messages) {
        const event = JSON.parse(message.value.toString('utf8')) as unknown;
        if (validate && !validate(event))
          this.schemaErrors.push(`${batch.topic}: ${JSON.stringify(validate.errors)}`);
        if (batch.topic === topics.nodeBundles) this.bundles.push(event as NodeBundleEvent);
        else if (batch.topic === topics.distributionEvents) {
          const distributed = event as DistributionEvent;
          if (distributed.type === 'distribution.confirmed') this.confirmations.push(distributed);
          else this.fetches.push(distributed);
        } else this.results.push(event as GenerationEvent);
      }
    });
  }

  async stop(): Promise<void> {
    await this.consumer?.close();
  }

  /**
   * Waits until `enough` holds and then no event has arrived for `quietMs`: what a test counts
   * after that is all there is, not a prefix still in flight.
   */
  async quiet(enough: () => boolean, what: string, quietMs = 1_000): Promise<void> {
    await eventually(() => enough() && Date.now() - this.lastArrival >= quietMs, {
      what: `${what}, then ${quietMs} ms without events`,
      timeoutMs: 60_000,
    });
  }

  bundlesAt(revision: number): NodeBundleEvent[] {
    return this.bundles.filter((event) => event.revision === revision);
  }

  resultsAt(revision: number): GenerationEvent[] {
    return this.results.filter((event) => event.revision === revision);
  }
}

export interface GeneratorProcess {
  readonly instanceId: string;
  readonly url: string;
  readonly process: ManagedProcess;
}

export interface ServiceProcess {
  readonly name: string;
  readonly url: string;
  readonly process: ManagedProcess;
  readonly dataDir: string;
}

export class Pipeline {
  readonly id = randomBytes(5).toString('hex');
  readonly tokenSecret = randomBytes(24).toString('hex');
  /** The config API's bootstrap admin: `request` sends it unless told otherwise. */
  readonly adminToken = randomBytes(24).toString('hex');
  /** The reader's token the generators and the distribution-service read the configuration with. */
  readonly serviceToken = randomBytes(24).toString('hex');
  distribution: ServiceProcess | undefined;
  readonly relays = new Map<string, ServiceProcess>();
  readonly topics: TopicNames;
  readonly events = new EventLog();
  readonly generators: GeneratorProcess[] = [];
  configUrl = '';
  private config: ManagedProcess | undefined;
  private cache: RedisBundleCache | undefined;
  private readonly logDir = mkdtempSync(join(tmpdir(), 'policygen-e2e-'));
  private readonly ports = new Map<string, number>();

  /** Kafka, Redis and Postgres: the harness's, unless a test brings its own (the chaos suite does). */
  constructor(private readonly infra: TestInfrastructure = getTestInfrastructure()) {
    this.topics = topicsFor(this.namespace);
  }

  /** The topic namespace of this pipeline (POLICYGEN_TOPIC_NAMESPACE). */
  get namespace(): string {
    return `e2e-${this.id}`;
  }

  get schema(): string {
    return `e2e_${this.id}`;
  }

  get redisPrefix(): string {
    return `e2e:${this.id}:`;
  }

  async start(): Promise<void> {
    await this.events.start(this.topics, this.infra.kafkaBrokers);
    await this.startConfigService();
    this.cache = await RedisBundleCache.connect({ url: this.infra.redisUrl, prefix: this.redisPrefix });
  }

  /** Starts the config-service (or restarts it, on its port), and waits until it answers. */
  async startConfigService(): Promise<ManagedProcess> {
    const port = await this.portOf('config-service');
    this.configUrl = `http://127.0.0.1:${port}`;
    this.config = ManagedProcess.start({
      name: 'config-service',
      command: process.execPath,
      args: [bundled('config-service')],
      logFile: join(this.logDir, 'config-service.log'),
      env: {
        ...process.env,
        PORT: String(port),
        DATABASE_URL: this.infra.databaseUrl,
        KAFKA_BROKERS: this.infra.kafkaBrokers.join(','),
        POLICYGEN_DB_SCHEMA: this.schema,
        POLICYGEN_TOPIC_NAMESPACE: `e2e-${this.id}`,
        POLICYGEN_NODE_TOKEN_SECRET: this.tokenSecret,
        POLICYGEN_ADMIN_TOKEN: this.adminToken,
        POLICYGEN_SERVICE_TOKEN: this.serviceToken,
        POLICYGEN_GENERATOR_GROUP: `generator-${this.id}`,
        POLICYGEN_PARTITIONS: '6',
        // Below the demo fleet's import: imports travel as "left out, read the snapshot".
        POLICYGEN_MAX_EVENT_BYTES: String(64 * 1024),
      },
    });
    await this.waitHealthy(this.config, this.configUrl);
    return this.config;
  }

  /** The config-service's process, while it runs. */
  get configService(): ManagedProcess | undefined {
    return this.config;
  }

  /** The port a service had (it keeps it across restarts, as its clients expect), or a free one. */
  private async portOf(service: string): Promise<number> {
    const known = this.ports.get(service);
    if (known !== undefined) return known;
    const port = await freePort();
    this.ports.set(service, port);
    return port;
  }

  /** Starts a generator instance (or restarts one by its id), and waits until it answers. */
  async startGenerator(instanceId = `g${this.generators.length + 1}`): Promise<GeneratorProcess> {
    const port = await this.portOf(`generator ${instanceId}`);
    const url = `http://127.0.0.1:${port}`;
    const process_ = ManagedProcess.start({
      name: `generator ${instanceId}`,
      command: process.execPath,
      args: [bundled('generator-service')],
      logFile: join(this.logDir, `generator-${instanceId}.log`),
      env: {
        ...process.env,
        PORT: String(port),
        CONFIG_SERVICE_URL: this.configUrl,
        POLICYGEN_SERVICE_TOKEN: this.serviceToken,
        KAFKA_BROKERS: this.infra.kafkaBrokers.join(','),
        REDIS_URL: this.infra.redisUrl,
        POLICYGEN_INSTANCE_ID: instanceId,
        POLICYGEN_GENERATOR_GROUP: `generator-${this.id}`,
        POLICYGEN_TOPIC_NAMESPACE: `e2e-${this.id}`,
        POLICYGEN_REDIS_PREFIX: this.redisPrefix,
        POLICYGEN_PARTITIONS: '6',
        POLICYGEN_SESSION_TIMEOUT_MS: '6000',
      },
    });
    await this.waitHealthy(process_, url);
    const generator = { instanceId, url, process: process_ };
    const index = this.generators.findIndex((running) => running.instanceId === instanceId);
    if (index >= 0) this.generators[index] = generator;
    else this.generators.push(generator);
    return generator;
  }

  /** Starts the distribution-service (or restarts it on its data), and waits until it answers. */
  async startDistribution(): Promise<ServiceProcess> {
    const port = await this.portOf('distribution-service');
    const url = `http://127.0.0.1:${port}`;
    const dataDir = this.distribution?.dataDir ?? join(this.logDir, 'data', 'distribution');
    const managed = ManagedProcess.start({
      name: 'distribution-service',
      command: process.execPath,
      args: [bundled('distribution-service')],
      logFile: join(this.logDir, 'distribution-service.log'),
      env: {
        ...process.env,
        HOST: '127.0.0.1',
        PORT: String(port),
        CONFIG_SERVICE_URL: this.configUrl,
        POLICYGEN_SERVICE_TOKEN: this.serviceToken,
        KAFKA_BROKERS: this.infra.kafkaBrokers.join(','),
        REDIS_URL: this.infra.redisUrl,
        POLICYGEN_DATA_DIR: dataDir,
        POLICYGEN_NODE_TOKEN_SECRET: this.tokenSecret,
        POLICYGEN_INSTANCE_ID: 'd1',
        POLICYGEN_DISTRIBUTION_GROUP: `distribution-${this.id}`,
        POLICYGEN_TOPIC_NAMESPACE: `e2e-${this.id}`,
        POLICYGEN_REDIS_PREFIX: this.redisPrefix,
        POLICYGEN_PARTITIONS: '6',
        POLICYGEN_SESSION_TIMEOUT_MS: '6000',
      },
    });
    await this.waitHealthy(managed, url);
    this.distribution = { name: 'distribution-service', url, process: managed, dataDir };
    return this.distribution;
  }

  /**
   * Starts a relay under a parent (the distribution-service's URL or a relay's), on the data and
   * the port it had if it ran before; waits until it answers.
   */
  async startRelay(relayId: string, parentUrl: string): Promise<ServiceProcess> {
    const port = await this.portOf(`relay ${relayId}`);
    const url = `http://127.0.0.1:${port}`;
    const dataDir = this.relays.get(relayId)?.dataDir ?? join(this.logDir, 'data', `relay-${relayId}`);
    const managed = ManagedProcess.start({
      name: `relay ${relayId}`,
      command: process.execPath,
      args: [bundled('relay')],
      logFile: join(this.logDir, `relay-${relayId}.log`),
      env: {
        ...process.env,
        HOST: '127.0.0.1',
        PORT: String(port),
        POLICYGEN_RELAY_ID: relayId,
        POLICYGEN_PARENT_URL: parentUrl,
        // Its credential for its parent, as an admin would have it issued from the same secret.
        POLICYGEN_RELAY_TOKEN: issueRelayToken(this.tokenSecret, relayId),
        POLICYGEN_DATA_DIR: dataDir,
        POLICYGEN_POLL_WAIT_MS: '20000',
      },
    });
    await this.waitHealthy(managed, url);
    const relay = { name: `relay ${relayId}`, url, process: managed, dataDir };
    this.relays.set(relayId, relay);
    return relay;
  }

  /** A node's token, issued by the config-service. */
  async nodeToken(nodeId: string): Promise<string> {
    const response = await fetch(`${this.configUrl}/api/v1/nodes/${encodeURIComponent(nodeId)}/token`, {
      method: 'POST',
      headers: { authorization: `Bearer ${this.adminToken}` },
    });
    if (!response.ok) throw new Error(`no token for ${nodeId}: ${response.status} ${await response.text()}`);
    return ((await response.json()) as { token: string }).token;
  }

  async generatorStatus(
    generator: GeneratorProcess,
  ): Promise<{ revision: number | null; pending: number; queued: number; ownership: string }> {
    const response = await fetch(`${generator.url}/status`);
    return (await response.json()) as {
      revision: number | null;
      pending: number;
      queued: number;
      ownership: string;
    };
  }

  async request(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; body: unknown; headers: Headers }> {
    const response = await fetch(`${this.configUrl}${path}`, {
      method,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${this.adminToken}`, ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return {
      status: response.status,
      body: text ? (JSON.parse(text) as unknown) : null,
      headers: response.headers,
    };
  }

  /** Imports the demo fleet (`npm start`'s), and resolves with its revision. */
  async importDemoFleet(): Promise<number> {
    const imported = await this.request('POST', '/api/v1/import', buildDemoFleet());
    if (imported.status !== 200) throw new Error(`the import answered ${imported.status}`);
    return (imported.body as { revision: number }).revision;
  }

  async revision(): Promise<number> {
    const { body } = await this.request('GET', '/api/v1/revision');
    return (body as { revision: number }).revision;
  }

  async exportFleet(): Promise<unknown> {
    return (await this.request('GET', '/api/v1/export')).body;
  }

  /** The node → hash map the generators serve (their Redis state). */
  async servedHashes(): Promise<Map<string, string>> {
    const held = await (this.cache as RedisBundleCache).nodeHashes();
    return new Map([...held].map(([nodeId, entry]) => [nodeId, entry.hash]));
  }

  bundleCache(): RedisBundleCache {
    return this.cache as RedisBundleCache;
  }

  /** Waits until every generator has applied `revision` and has nothing left to do. */
  async settled(revision: number, timeoutMs = 60_000): Promise<void> {
    await eventually(
      async () => {
        for (const generator of this.generators) {
          if (!generator.process.running) continue;
          const status = await this.generatorStatus(generator).catch(() => undefined);
          if (!status || status.revision !== revision || status.pending > 0 || status.queued > 0)
            return false;
        }
        return true;
      },
      { what: `the generators at revision ${revision} with nothing pending`, timeoutMs, intervalMs: 100 },
    );
  }

  async stop(): Promise<void> {
    await Promise.all([...this.relays.values()].map((relay) => relay.process.stop()));
    await this.distribution?.process.stop();
    await Promise.all(this.generators.map((generator) => generator.process.stop()));
    await this.config?.stop();
    await this.events.stop();
    await this.cache?.close();
    const pool = new Pool({ connectionString: this.infra.databaseUrl });
    await pool.query(`drop schema if exists "${this.schema}" cascade`);
    await pool.end();
    const client = createClient({ url: this.infra.redisUrl });
    await client.connect();
    const keys = await client.keys(`${this.redisPrefix}*`);
    for (let start = 0; start < keys.length; start += 1_000)
      await client.del(keys.slice(start, start + 1_000));
    await client.close();
  }

  /** The services' logs, each cut to its last `lines` lines. */
  logs(lines = 30): string {
    return readdirSync(this.logDir)
      .filter((file) => file.endsWith('.log'))
      .map(
        (file) =>
          `--- ${file}\n${readFileSync(join(this.logDir, file), 'utf8').split('\n').slice(-lines).join('\n')}`,
      )
      .join('\n');
  }

  private async waitHealthy(managed: ManagedProcess, url: string): Promise<void> {
    await eventually(
      async () => {
        if (!managed.running)
          throw new Error(`${managed.name} ${managed.describeExit()}:\n${managed.logTail()}`);
        return fetch(`${url}/health/live`).then(
          (response) => response.ok,
          () => false,
        );
      },
      { what: `${managed.name} to answer on ${url}/health/live`, timeoutMs: 60_000, intervalMs: 100 },
    );
  }
}

/** Runs a test on a pipeline of its own, stopped afterwards; a failure carries the services' logs. */
export async function withPipeline(test: (pipeline: Pipeline) => Promise<void>): Promise<void> {
  const pipeline = new Pipeline();
  try {
    await pipeline.start();
    await test(pipeline);
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${pipeline.logs()}`);
  } finally {
    await pipeline.stop();
  }
}

/** An entity as the REST API gives it. */
export type Entity = Record<string, unknown>;

/**
 * What `policygen generate` gives for a fleet file: node → bundle hash, for the nodes it writes a
 * good tree for (a failed node's tree holds only its manifest; an ignored node gets none).
 */
export function generateWithCli(fleet: unknown): Map<string, string> {
  const out = generateTreesWithCli(fleet);
  const result = new Map<string, string>();
  for (const nodeId of readdirSync(out)) {
    const manifest = JSON.parse(readFileSync(join(out, nodeId, 'policy-manifest.json'), 'utf8')) as {
      status: string;
      hash: string | null;
    };
    if (manifest.status === 'ok' && manifest.hash) result.set(nodeId, manifest.hash);
  }
  return result;
}

/**
 * `policygen generate` of a fleet file into a new directory, one tree per node under it. Given the
 * revision and time the service generated a bundle at, the CLI writes the same bytes.
 */
export function generateTreesWithCli(
  fleet: unknown,
  options: {
    readonly revision?: number;
    readonly generatedAt?: number;
    readonly nodes?: readonly string[];
  } = {},
): string {
  const dir = mkdtempSync(join(tmpdir(), 'policygen-e2e-generate-'));
  const fleetFile = join(dir, 'fleet.json');
  writeFileSync(fleetFile, JSON.stringify(fleet));
  const out = join(dir, 'out');
  try {
    execFileSync(
      process.execPath,
      [
        join(root, 'dist', 'cli', 'policygen.js'),
        'generate',
        '--fleet',
        fleetFile,
        '--out',
        out,
        ...(options.revision === undefined ? [] : ['--revision', String(options.revision)]),
        ...(options.generatedAt === undefined ? [] : ['--generated-at', String(options.generatedAt)]),
        ...(options.nodes ?? []).flatMap((nodeId) => ['--node', nodeId]),
      ],
      {
        stdio: 'pipe',
      },
    );
  } catch (error) {
    // Exit 1: some node failed, the others are written.
    if ((error as { status?: number }).status !== 1) throw error;
  }
  return out;
}

export type { Topic };
