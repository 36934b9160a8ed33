import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { issueRelayToken } from '@policygen/distribution';
import type { TestInfrastructure } from '@policygen/testing-infra';
import { eventually, freePort, ManagedProcess, workspaceRoot } from '@policygen/testing-infra';

/** A service of the pipeline, running as a process of its own from its built bundle. */
export interface RunningService {
  readonly name: string;
  /** The script it runs: its service's bundle in this tree, or another build's (`startGenerator`). */
  readonly bundleFile: string;
  readonly url: string;
  readonly process: ManagedProcess;
  readonly dataDir?: string;
}

export type BundledService = 'config-service' | 'generator-service' | 'distribution-service' | 'relay';

/** Where a benchmark run keeps its topics, schema, Redis keys and consumer groups apart from others. */
export interface BenchNamespace {
  readonly id: string;
  readonly topicNamespace: string;
  readonly schema: string;
  readonly redisPrefix: string;
  readonly generatorGroup: string;
  readonly distributionGroup: string;
}

export function freshNamespace(): BenchNamespace {
  const id = randomBytes(5).toString('hex');
  return {
    id,
    topicNamespace: `bench-${id}`,
    schema: `bench_${id}`,
    redisPrefix: `bench:${id}:`,
    generatorGroup: `bench-generator-${id}`,
    distributionGroup: `bench-distribution-${id}`,
  };
}

/**
 * A generator's heap cap, sized for the nodes it holds (its share of the fleet: an instance of
 * several keeps only its own, `node-share.ts`): 448 MiB and 13 KiB a node held, at least 1 GiB.
 * One generator of 100,000 nodes gets 1,718 MiB, as deploy/Dockerfile's 1,728: about 0.98 GiB of
 * the engine's state lives there (0.53 GiB for a half share), and without a cap V8 lets garbage
 * grow towards its own default limit (3.3 GiB of RSS there) before collecting it. Under a cap sized
 * for the whole fleet an instance did the same with its share's garbage. The base was 512 MiB
 * until the young generation grew to 64 MiB semi-spaces (`YOUNG_GENERATION_FLAG`), which live
 * outside this cap: the old generation gave up what the young one took.
 */
export function generatorHeapMiB(nodes: number, generators = 1): number {
  const held = Math.ceil(nodes / generators);
  return Math.max(1_024, Math.ceil(448 + (held * 13) / 1024));
}

/**
 * The young generation of the services that allocate per node change (the generator, the
 * distribution-service, a relay): 64 MiB semi-spaces instead of V8's 16 (or the smaller one a capped
 * heap makes it choose). Objects that live for one batch then die young instead of being promoted
 * and marked: on 10,000 nodes the services' steady CPU per node change fell 8–11% in three
 * alternating pairs of runs, for 45–100 MiB more peak RSS each (README, "Fourteenth increment").
 * The config-service allocates per commit, not per node, and gained nothing: it keeps V8's default.
 */
export const YOUNG_GENERATION_FLAG = '--max-semi-space-size=64';

/**
 * The first full collection of every service waits for 512 MiB of old generation: growing from
 * V8's small start, each full collection dropped the optimised code of per-call callbacks, compiled
 * again after it (README, "Twentieth increment"). The config-service too: its compiler threads
 * took a fifth of its CPU at steady, and after its warm-up a full collection dropped the code of a
 * few dozen functions at once ("weak objects"); with the flag, 13–16% less CPU a commit (README,
 * "Twenty-third increment"). A flag of the command: `NODE_OPTIONS` refuses it.
 */
const FIRST_FULL_COLLECTION_FLAG = '--initial-old-space-size=512';

function generatorHeapFlags(heapMiB: number): string[] {
  return [`--max-old-space-size=${heapMiB}`, YOUNG_GENERATION_FLAG];
}

/** `NODE_OPTIONS` with `flags` after what this process was given. */
function nodeOptionsWith(flags: readonly string[]): string {
  return [process.env['NODE_OPTIONS'], ...flags].join(' ').trim();
}

/** A service's name as a directory name: `generator g1` → `generator-g1`. */
export function serviceSlug(name: string): string {
  return name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

export function bundlePath(service: BundledService): string {
  const file = join(workspaceRoot(), 'dist', service, 'main.js');
  if (!existsSync(file)) throw new Error(`${file} is missing: run \`npm run build\` first`);
  return file;
}

/**
 * How often a profiled service's main thread is sampled (`--profile`). At V8's default of 1 ms the
 * sampler's signal woke each service 4–37 times as often as it woke on its own and added 20–50% to
 * its CPU (10,000 nodes: config-service 0.31 → 0.47 CPU ms per node change, 465 → 17,345 wake-ups
 * at import); every 10 ms they came within 5–15% of an unprofiled run's, and a 30 s phase still
 * gives 3,000 samples. `--node-option=--cpu-prof-interval=<µs>` sets another.
 */
export const PROFILE_INTERVAL_MS = 10;
/**
 * Starts the built services as processes, on the given infrastructure and namespace, each with its
 * log in `workDir`; remembers every one it started so that `stopAll` leaves nothing behind.
 */
export class ServiceLauncher {
  readonly started: RunningService[] = [];
  readonly tokenSecret = randomBytes(24).toString('hex');
  /** The config API's bootstrap admin: the benchmark imports, commits and asks for node tokens. */
  readonly adminToken = randomBytes(24).toString('hex');
  /** The reader's token the generators and the distribution-service read the configuration with. */
  readonly serviceToken = randomBytes(24).toString('hex');
  private readonly exitListeners: ((service: RunningService) => void)[] = [];

  constructor(
    private readonly infrastructure: TestInfrastructure,
    private readonly namespace: BenchNamespace,
    private readonly workDir: string,
    /** When set, each service writes a V8 CPU profile into `<profileDir>/<its slug>` as it exits. */
    private readonly profileDir?: string,
    /** Options for every service's `node` (`--perf-basic-prof`, `--trace-deopt`…), before its bundle. */
    private readonly nodeOptions: readonly string[] = [],
  ) {}

  /** Called when a service exits while the benchmark still needs it. */
  onUnexpectedExit(listener: (service: RunningService) => void): void {
    this.exitListeners.push(listener);
  }

  /** The config-service; `bundleFile` runs another build's instead of this tree's. */
  async startConfigService(bundleFile?: string): Promise<RunningService> {
    return this.start(
      'config-service',
      'config-service',
      {
        DATABASE_URL: this.infrastructure.databaseUrl,
        KAFKA_BROKERS: this.kafkaBrokers,
        HOST: '127.0.0.1',
        POLICYGEN_DB_SCHEMA: this.namespace.schema,
        POLICYGEN_TOPIC_NAMESPACE: this.namespace.topicNamespace,
        POLICYGEN_NODE_TOKEN_SECRET: this.tokenSecret,
        POLICYGEN_ADMIN_TOKEN: this.adminToken,
        POLICYGEN_SERVICE_TOKEN: this.serviceToken,
        // The benchmark asks for the token of every node it checks, at once: not a client to limit.
        POLICYGEN_TOKEN_RATE_PER_MINUTE: '1000000',
        POLICYGEN_GENERATOR_GROUP: this.namespace.generatorGroup,
      },
      { nodeArgs: [FIRST_FULL_COLLECTION_FLAG], ...(bundleFile === undefined ? {} : { bundleFile }) },
    );
  }

  /**
   * A generator; `heapMiB` caps its V8 heap as a deployment would (see `generatorHeapMiB`), and
   * `bundleFile` runs another build's generator instead of this tree's.
   */
  async startGenerator(
    instanceId: string,
    configUrl: string,
    heapMiB?: number,
    bundleFile?: string,
  ): Promise<RunningService> {
    return this.start(
      `generator ${instanceId}`,
      'generator-service',
      {
        NODE_OPTIONS: nodeOptionsWith(
          heapMiB === undefined ? [YOUNG_GENERATION_FLAG] : generatorHeapFlags(heapMiB),
        ),
        CONFIG_SERVICE_URL: configUrl,
        POLICYGEN_SERVICE_TOKEN: this.serviceToken,
        KAFKA_BROKERS: this.kafkaBrokers,
        REDIS_URL: this.infrastructure.redisUrl,
        POLICYGEN_INSTANCE_ID: instanceId,
        POLICYGEN_GENERATOR_GROUP: this.namespace.generatorGroup,
        POLICYGEN_TOPIC_NAMESPACE: this.namespace.topicNamespace,
        POLICYGEN_REDIS_PREFIX: this.namespace.redisPrefix,
      },
      { nodeArgs: [FIRST_FULL_COLLECTION_FLAG], ...(bundleFile === undefined ? {} : { bundleFile }) },
    );
  }

  async startDistribution(configUrl: string): Promise<RunningService> {
    const dataDir = join(this.workDir, 'data', 'distribution');
    return this.start(
      'distribution-service',
      'distribution-service',
      {
        NODE_OPTIONS: nodeOptionsWith([YOUNG_GENERATION_FLAG]),
        HOST: '127.0.0.1',
        CONFIG_SERVICE_URL: configUrl,
        POLICYGEN_SERVICE_TOKEN: this.serviceToken,
        KAFKA_BROKERS: this.kafkaBrokers,
        REDIS_URL: this.infrastructure.redisUrl,
        POLICYGEN_DATA_DIR: dataDir,
        POLICYGEN_NODE_TOKEN_SECRET: this.tokenSecret,
        POLICYGEN_INSTANCE_ID: 'd1',
        POLICYGEN_DISTRIBUTION_GROUP: this.namespace.distributionGroup,
        POLICYGEN_TOPIC_NAMESPACE: this.namespace.topicNamespace,
        POLICYGEN_REDIS_PREFIX: this.namespace.redisPrefix,
      },
      { dataDir, nodeArgs: [FIRST_FULL_COLLECTION_FLAG] },
    );
  }

  /** A relay on an empty data directory of its own (`label` names it in logs and the report). */
  async startRelay(label: string, relayId: string, parentUrl: string): Promise<RunningService> {
    const dataDir = join(this.workDir, 'data', `relay-${label}`);
    return this.start(
      label,
      'relay',
      {
        NODE_OPTIONS: nodeOptionsWith([YOUNG_GENERATION_FLAG]),
        HOST: '127.0.0.1',
        POLICYGEN_RELAY_ID: relayId,
        POLICYGEN_PARENT_URL: parentUrl,
        // Its credential for its parent, derived from the secret the launcher gave the services.
        POLICYGEN_RELAY_TOKEN: issueRelayToken(this.tokenSecret, relayId),
        POLICYGEN_DATA_DIR: dataDir,
      },
      { dataDir, nodeArgs: [FIRST_FULL_COLLECTION_FLAG] },
    );
  }

  /** Stops every service, the last started first (relays before their parent). */
  async stopAll(): Promise<void> {
    const services = [...this.started].reverse();
    this.started.length = 0;
    for (const service of services) await service.process.stop();
  }

  private get kafkaBrokers(): string {
    return this.infrastructure.kafkaBrokers.join(',');
  }

  private async start(
    name: string,
    service: BundledService,
    env: Record<string, string>,
    {
      dataDir,
      bundleFile = bundlePath(service),
      nodeArgs = [],
    }: { dataDir?: string; bundleFile?: string; nodeArgs?: readonly string[] } = {},
  ): Promise<RunningService> {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const profileFlags: string[] = [];
    if (this.profileDir !== undefined) {
      const dir = join(this.profileDir, serviceSlug(name));
      mkdirSync(dir, { recursive: true });
      profileFlags.push(
        '--cpu-prof',
        `--cpu-prof-dir=${dir}`,
        `--cpu-prof-interval=${PROFILE_INTERVAL_MS * 1000}`,
      );
    }
    const managed = ManagedProcess.start({
      name,
      command: process.execPath,
      args: [...profileFlags, ...nodeArgs, ...this.nodeOptions, bundleFile],
      logFile: join(this.workDir, `${name.replace(/\s+/g, '-')}.log`),
      env: { ...process.env, ...env, PORT: String(port) },
    });
    const running: RunningService = {
      name,
      bundleFile,
      url,
      process: managed,
      ...(dataDir ? { dataDir } : {}),
    };
    this.started.push(running);
    void managed.exited.then(() => {
      if (this.started.includes(running)) for (const listener of this.exitListeners) listener(running);
    });
    await eventually(
      async () => {
        if (!managed.running) throw new Error(`${name} ${managed.describeExit()}:\n${managed.logTail()}`);
        return fetch(`${url}/health/live`).then(
          (response) => response.ok,
          () => false,
        );
      },
      { what: `${name} to answer on ${url}/health/live`, timeoutMs: 120_000, intervalMs: 100 },
    );
    return running;
  }
}
