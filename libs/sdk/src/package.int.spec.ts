import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Kafka, logLevel } from 'kafkajs';
import { eventually, getTestInfrastructure, workspaceRoot } from '@policygen/testing-infra';
import type { ConfigChangeEvent, NodeBundleEvent } from './contract';
import { topicsFor } from './contract';

const CONSUMER = `
import { TOPICS, connectionFromEnvironment, createConsumer } from '@policygen/sdk';
import type { ConfigChangeEvent, NodeBundleEvent } from '@policygen/sdk';

const print = (line: Record<string, unknown>): void => void process.stdout.write(JSON.stringify(line) + '\\n');
const groupId = process.env['GROUP'];
if (!groupId) throw new Error('GROUP is not set');

const consumer = createConsumer(connectionFromEnvironment(), {
  groupId,
  retry: { attempts: 2, initialDelayMs: 10, maxDelayMs: 20 },
});
consumer.subscribe(TOPICS.configChanges, (event: ConfigChangeEvent) => print({ change: event.revision }));
consumer.subscribe(TOPICS.nodeBundles, (event: NodeBundleEvent, context) => {
  if (event.type === 'node.bundle') print({ bundle: event.nodeId, revision: event.revision, files: event.files.length, offset: context.offset });
  else print({ deleted: event.nodeId, revision: event.revision });
});
process.once('SIGTERM', () => {
  void consumer.stop().then(() => {
    print({ stopped: consumer.stats() });
    process.exit(0);
  });
});
void consumer.start().then(() => print({ started: true }));
`;

/** The SDK as its users get it: packed, installed from the tarball outside this workspace, compiled strictly. */
describe('@policygen/sdk as an npm package', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'policygen-sdk-user-'));
  const namespace = `sdk-package-${randomUUID().slice(0, 8)}`;
  const topics = topicsFor(namespace);
  const kafka = new Kafka({ brokers: [...getTestInfrastructure().kafkaBrokers], logLevel: logLevel.NOTHING });
  const producer = kafka.producer();
  let consumerProcess: ChildProcess | undefined;
  const lines: Record<string, unknown>[] = [];

  beforeAll(async () => {
    const packed = execFileSync(
      process.execPath,
      [join(workspaceRoot(), 'tools', 'sdk', 'pack.mjs'), '--out', scratch],
      {
        encoding: 'utf8',
      },
    );
    const tarball = packed.trim().split('\n').pop() as string;
    const typesNode = JSON.parse(
      readFileSync(join(workspaceRoot(), 'node_modules', '@types', 'node', 'package.json'), 'utf8'),
    ) as { version: string };
    writeFileSync(
      join(scratch, 'package.json'),
      JSON.stringify({
        name: 'a-policygen-consumer',
        private: true,
        dependencies: { '@policygen/sdk': `file:${tarball}`, '@types/node': typesNode.version },
      }),
    );
    execFileSync('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], {
      cwd: scratch,
      stdio: 'pipe',
    });
    writeFileSync(
      join(scratch, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          // As \`tsc --init\` writes it (zod's declarations need it); skipLibCheck stays off: the SDK's declarations are checked too.
          esModuleInterop: true,
          target: 'ES2022',
          module: 'commonjs',
          moduleResolution: 'node',
          outDir: 'out',
          types: ['node'],
        },
        files: ['consumer.ts'],
      }),
    );
    writeFileSync(join(scratch, 'consumer.ts'), CONSUMER);
    compile(['-p', scratch]);
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({
      waitForLeaders: true,
      topics: [
        { topic: topics.configChanges, numPartitions: 1 },
        { topic: topics.nodeBundles, numPartitions: 3 },
      ],
    });
    await admin.disconnect();
    await producer.connect();
  }, 300_000);

  afterAll(async () => {
    consumerProcess?.kill('SIGKILL');
    await producer.disconnect();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('installs from its tarball with registry dependencies only, and a consumer compiles against it with tsc --strict', () => {
    const installed = JSON.parse(
      readFileSync(join(scratch, 'node_modules', '@policygen', 'sdk', 'package.json'), 'utf8'),
    ) as { dependencies: Record<string, string> };
    expect(Object.keys(installed.dependencies).sort()).toEqual(['eventsource-parser', 'kafkajs', 'zod']);
    expect(() =>
      execFileSync('npm', ['ls', '--all', '--json'], { cwd: scratch, stdio: 'pipe' }),
    ).not.toThrow();
    expect(readFileSync(join(scratch, 'out', 'consumer.js'), 'utf8')).toContain('require("@policygen/sdk")');
    // The compiler checks the consumer's types against the package's: a wrong field does not compile.
    writeFileSync(join(scratch, 'wrong.ts'), CONSUMER.replace('event.revision })', 'event.revison })'));
    expect(() =>
      compile(['--strict', '--esModuleInterop', '--noEmit', '--types', 'node', join(scratch, 'wrong.ts')]),
    ).toThrow(/revison/);
  });

  it('receives the events of a change from Kafka; a poison message goes to the DLQ while the next ones arrive', async () => {
    consumerProcess = spawn(process.execPath, [join(scratch, 'out', 'consumer.js')], {
      cwd: scratch,
      env: {
        ...process.env,
        POLICYGEN_KAFKA_BROKERS: getTestInfrastructure().kafkaBrokers.join(','),
        POLICYGEN_TOPIC_NAMESPACE: namespace,
        GROUP: `${namespace}-consumer`,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    createInterface({ input: consumerProcess.stdout as NodeJS.ReadableStream }).on('line', (line) =>
      lines.push(JSON.parse(line) as Record<string, unknown>),
    );
    await eventually(() => lines.some((line) => line['started']), {
      what: 'the consumer to start',
      timeoutMs: 60_000,
    });

    const committedAt = new Date().toISOString();
    const change: { event: ConfigChangeEvent } = {
      event: { schemaVersion: 1, type: 'config.change', revision: 7, committedAt, changeSet: { upsert: {} } },
    };
    const bundle: { event: NodeBundleEvent } = {
      event: {
        schemaVersion: 1,
        type: 'node.bundle',
        nodeId: 'web-1',
        revision: 1,
        committedAt,
        hash: `sha256:${'3f'.repeat(32)}`,
        files: [{ path: 'rules/cfengine-community/promises.cf', sha256: '9c'.repeat(32) }],
        manifestSha256: 'a1'.repeat(32),
      },
    };
    await producer.send({
      topic: topics.configChanges,
      messages: [{ key: 'config', value: JSON.stringify(change.event) }],
    });
    // One node's key: the poison message sits in the same partition, between two good ones.
    await producer.send({
      topic: topics.nodeBundles,
      messages: [
        { key: 'web-1', value: JSON.stringify({ ...bundle.event, nodeId: 'web-1', revision: 1 }) },
        {
          key: 'web-1',
          value: '{"schemaVersion": 1, "type": "node.bundle", "nodeId": 42}',
          headers: { trace: 't-1' },
        },
        { key: 'web-1', value: JSON.stringify({ ...bundle.event, nodeId: 'web-1', revision: 2 }) },
        {
          key: 'web-1',
          value: JSON.stringify({
            schemaVersion: 1,
            type: 'node.deleted',
            nodeId: 'web-1',
            revision: 3,
            committedAt: bundle.event.committedAt,
          }),
        },
      ],
    });

    await eventually(() => lines.some((line) => line['deleted'] === 'web-1'), {
      what: 'the events after the poison message',
      timeoutMs: 60_000,
    });
    // In order per key; topics are independent of each other.
    expect(lines.filter((line) => 'change' in line)).toEqual([{ change: change.event.revision }]);
    expect(lines.filter((line) => 'bundle' in line || 'deleted' in line)).toEqual([
      expect.objectContaining({ bundle: 'web-1', revision: 1, files: 1 }),
      expect.objectContaining({ bundle: 'web-1', revision: 2, files: 1 }),
      { deleted: 'web-1', revision: 3 },
    ]);

    const deadLetters = await readAll(kafka, `${topics.nodeBundles}.dlq`, 1);
    expect(deadLetters).toHaveLength(1);
    expect(deadLetters[0]?.value).toBe('{"schemaVersion": 1, "type": "node.bundle", "nodeId": 42}');
    expect(deadLetters[0]?.headers['trace']).toBe('t-1');
    expect(deadLetters[0]?.headers['policygen-error']).toMatch(/\$\.nodeId/);
    expect(deadLetters[0]?.headers['policygen-origin']).toMatch(
      new RegExp(`^${topics.nodeBundles.replace(/\./g, '\\.')}/\\d+/\\d+$`),
    );

    // A graceful stop commits what was handled: the group has nothing left to read.
    consumerProcess.kill('SIGTERM');
    await eventually(() => lines.some((line) => line['stopped']), {
      what: 'the consumer to stop',
      timeoutMs: 30_000,
    });
    expect(lines.find((line) => line['stopped'])?.['stopped']).toMatchObject({ handled: 4, deadLettered: 1 });
    const admin = kafka.admin();
    await admin.connect();
    try {
      const committed = await admin.fetchOffsets({
        groupId: `${namespace}-consumer`,
        topics: [topics.nodeBundles],
      });
      const ends = await admin.fetchTopicOffsets(topics.nodeBundles);
      const unread = ends
        .filter(({ high }) => high !== '0')
        .filter(
          ({ partition, high }) =>
            committed[0]?.partitions.find((entry) => entry.partition === partition)?.offset !== high,
        );
      expect(unread).toEqual([]);
    } finally {
      await admin.disconnect();
    }
  }, 120_000);

  function compile(args: readonly string[]): void {
    const tsc = join(workspaceRoot(), 'node_modules', 'typescript', 'bin', 'tsc');
    try {
      execFileSync(process.execPath, [tsc, ...args], { cwd: scratch, encoding: 'utf8', stdio: 'pipe' });
    } catch (error) {
      throw new Error(`tsc ${args.join(' ')}: ${String((error as { stdout?: string }).stdout)}`);
    }
  }
});

async function readAll(
  kafka: Kafka,
  topic: string,
  count: number,
): Promise<{ value: string | null; headers: Record<string, string> }[]> {
  const consumer = kafka.consumer({ groupId: `reader-${randomUUID()}` });
  const read: { value: string | null; headers: Record<string, string> }[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        read.push({
          value: message.value?.toString('utf8') ?? null,
          headers: Object.fromEntries(
            Object.entries(message.headers ?? {}).map(([name, value]) => [name, String(value)]),
          ),
        });
      },
    });
    await eventually(() => read.length >= count, {
      what: `${count} message(s) on ${topic}`,
      timeoutMs: 30_000,
    });
  } finally {
    await consumer.disconnect();
  }
  return read;
}
