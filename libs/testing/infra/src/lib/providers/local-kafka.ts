import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { ManagedProcess } from '../managed-process';
import { canConnect, freePort } from '../net';
import type { ProvidedService } from '../provided-service';
import { InfrastructureError } from '../provided-service';
import { findExecutable, run, workspaceRoot } from '../system';
import type { RestartableServer, ServerRecipe } from '../restartable-server';
import { startServer } from '../restartable-server';
import { waitUntilReady } from '../wait-until-ready';

export interface LocalKafkaOptions {
  /** Bound on the broker's start-up, after its jars are resolved. */
  readonly startTimeoutMs?: number;
  /** Bound on resolving the jars with Maven (a cold cache downloads ~60 MB). */
  readonly resolveTimeoutMs?: number;
}

export interface LaunchedKafka {
  readonly process: ManagedProcess;
  readonly brokers: readonly string[];
  /** Resolves when the broker answers metadata requests; rejects, with its log, if it dies or times out. */
  readonly ready: Promise<ProvidedService<readonly string[]>>;
}

export function localKafkaMissing(): string | undefined {
  if (!findExecutable('java')) return 'java (Java 17) is not on PATH';
  if (!findExecutable('mvn')) return 'mvn (Maven) is not on PATH';
  return undefined;
}

/** Resolves the broker jars (cached outside git) and prints nothing on success. */
export async function resolveKafkaJars(timeoutMs: number): Promise<string> {
  const script = join(workspaceRoot(), 'deploy', 'kafka', 'resolve.sh');
  try {
    return (await run('bash', [script], { timeoutMs })).trim();
  } catch (error) {
    throw new InfrastructureError(
      `Could not resolve the Kafka broker jars with ${script}: ${(error as Error).message}`,
    );
  }
}

interface PreparedKafka {
  readonly brokers: readonly string[];
  readonly origin: string;
  readonly logFile: string;
  readonly recipe: ServerRecipe;
}

/**
 * A single-node Kafka broker in KRaft mode (combined broker + controller) from the Maven jars, on
 * free ports, its storage formatted in a fresh temporary folder: everything but the start.
 */
async function prepareLocalKafka(options: LocalKafkaOptions): Promise<PreparedKafka> {
  const libs = await resolveKafkaJars(options.resolveTimeoutMs ?? 15 * 60_000);
  const workDir = mkdtempSync(join(tmpdir(), 'policygen-kafka-'));
  const dataDir = join(workDir, 'data');
  mkdirSync(dataDir);
  const [brokerPort, controllerPort] = await twoFreePorts();
  const serverProperties = join(workDir, 'server.properties');
  const log4jProperties = join(workDir, 'log4j.properties');
  writeFileSync(serverProperties, brokerProperties({ brokerPort, controllerPort, dataDir }));
  writeFileSync(log4jProperties, LOG4J_TO_STDOUT);
  const classpath = `${libs}/*`;
  const origin = `Apache Kafka ${/kafka-([^/]+)\/libs$/.exec(libs)?.[1] ?? '3.9'} (KRaft) from Maven Central jars`;
  const java = ['-Xms128m', '-Xmx768m', '-XX:+UseG1GC', '-Djava.awt.headless=true'];
  const logFile = join(workDir, 'kafka.log');

  // A KRaft cluster id is 16 random bytes in URL-safe base64 without padding, as Kafka's Uuid prints it.
  const clusterId = randomBytes(16).toString('base64url');
  try {
    await run(
      'java',
      [
        ...java,
        '-cp',
        classpath,
        `-Dlog4j.configuration=file:${log4jProperties}`,
        'kafka.tools.StorageTool',
        'format',
        // Attached to its option: an id that starts with '-' (1 in 64) would be read as an option.
        `--cluster-id=${clusterId}`,
        '-c',
        serverProperties,
        '--ignore-formatted',
      ],
      { timeoutMs: 60_000 },
    );
  } catch (error) {
    rmSync(workDir, { recursive: true, force: true });
    throw new InfrastructureError(
      `Could not format the Kafka storage in ${dataDir}: ${(error as Error).message}`,
    );
  }
  const brokers = [`127.0.0.1:${brokerPort}`];
  return {
    brokers,
    origin,
    logFile,
    recipe: {
      what: `Kafka broker (${origin}, log ${logFile})`,
      workDir,
      startTimeoutMs: options.startTimeoutMs ?? 90_000,
      probe: () => answersMetadata(brokers, brokerPort),
      process: {
        name: 'kafka',
        command: 'java',
        args: [
          ...java,
          '-cp',
          classpath,
          `-Dlog4j.configuration=file:${log4jProperties}`,
          'kafka.Kafka',
          serverProperties,
        ],
        logFile,
      },
    },
  };
}

/** Starts a local broker, as prepareLocalKafka describes; tests may stop, kill and restart it on its data. */
export async function startRestartableKafka(
  options: LocalKafkaOptions = {},
): Promise<{ readonly brokers: readonly string[]; readonly server: RestartableServer }> {
  const prepared = await prepareLocalKafka(options);
  return { brokers: prepared.brokers, server: await startServer(prepared.recipe) };
}

/** Starts a local broker (see prepareLocalKafka) and removes its folder when it is stopped. */
export async function launchLocalKafka(options: LocalKafkaOptions = {}): Promise<LaunchedKafka> {
  const { brokers, origin, logFile, recipe } = await prepareLocalKafka(options);
  const broker = ManagedProcess.start(recipe.process);
  const stop = async (): Promise<void> => {
    await broker.stop();
    rmSync(recipe.workDir, { recursive: true, force: true });
  };
  const ready = waitUntilReady(broker, recipe.probe, {
    what: `Kafka broker (${origin}, log ${logFile})`,
    timeoutMs: recipe.startTimeoutMs,
  }).then(
    (): ProvidedService<readonly string[]> => ({
      endpoint: brokers,
      description: `Kafka: local broker started by the harness (${origin}) at ${brokers.join(',')}`,
      stop,
    }),
    async (error: unknown) => {
      await stop();
      throw error;
    },
  );
  return { process: broker, brokers, ready };
}

async function answersMetadata(brokers: readonly string[], port: number): Promise<boolean> {
  if (!(await canConnect('127.0.0.1', port))) return false;
  // The harness probes with the client directly: it must not depend on the libraries it tests.
  const admin = new Kafka({
    brokers: [...brokers],
    connectionTimeout: 1_000,
    requestTimeout: 5_000,
    retry: { retries: 0 },
    logLevel: logLevel.NOTHING,
  }).admin();
  try {
    await admin.connect();
    await admin.listTopics();
    return true;
  } finally {
    await admin.disconnect();
  }
}

async function twoFreePorts(): Promise<[number, number]> {
  const first = await freePort();
  let second = await freePort();
  while (second === first) second = await freePort();
  return [first, second];
}

function brokerProperties(ports: { brokerPort: number; controllerPort: number; dataDir: string }): string {
  return [
    'process.roles=broker,controller',
    'node.id=1',
    `controller.quorum.voters=1@127.0.0.1:${ports.controllerPort}`,
    `listeners=PLAINTEXT://127.0.0.1:${ports.brokerPort},CONTROLLER://127.0.0.1:${ports.controllerPort}`,
    `advertised.listeners=PLAINTEXT://127.0.0.1:${ports.brokerPort}`,
    'controller.listener.names=CONTROLLER',
    'inter.broker.listener.name=PLAINTEXT',
    'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    `log.dirs=${ports.dataDir}`,
    'num.partitions=1',
    'auto.create.topics.enable=false',
    'offsets.topic.replication.factor=1',
    'offsets.topic.num.partitions=10',
    'transaction.state.log.replication.factor=1',
    'transaction.state.log.min.isr=1',
    'transaction.state.log.num.partitions=4',
    // Tests start consumer groups constantly; the default 3 s delay only slows them down.
    'group.initial.rebalance.delay.ms=0',
    '',
  ].join('\n');
}

const LOG4J_TO_STDOUT = [
  'log4j.rootLogger=INFO, stdout',
  'log4j.appender.stdout=org.apache.log4j.ConsoleAppender',
  'log4j.appender.stdout.layout=org.apache.log4j.PatternLayout',
  'log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n',
  'log4j.logger.kafka=INFO',
  'log4j.logger.org.apache.kafka=INFO',
  'log4j.logger.state.change.logger=WARN',
  'log4j.logger.kafka.log.LogCleaner=WARN',
  '',
].join('\n');
