import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { TOPICS } from '@policygen/events';
import { DeadLetters } from '@policygen/messaging';
import type { DeadLetterPage } from '../io/pipeline-api';
import type { EmbeddedPipeline } from '../embedded/embedded-pipeline';
import { startEmbeddedPipeline } from '../embedded/embedded-pipeline';
import { run } from '../program';

function collector(): { stream: NodeJS.WriteStream; text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  return { stream: stream as unknown as NodeJS.WriteStream, text: () => chunks.join('') };
}

/** `policygen dlq` against the config API of `policygen start`, its dead letters on the in-process bus. */
describe('policygen dlq list|replay --url', () => {
  const directory = mkdtempSync(join(tmpdir(), 'policygen-dlq-'));
  const dlq = `${TOPICS.nodeBundles}.dlq`;
  let pipeline: EmbeddedPipeline;

  async function dlqCommand(...args: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
    const [stdout, stderr] = [collector(), collector()];
    const status = await run(['dlq', ...args], { stdout: stdout.stream, stderr: stderr.stream, env: {} });
    return { status, stdout: stdout.text(), stderr: stderr.text() };
  }
  const at = (): string[] => ['--url', pipeline.url, '--token', pipeline.adminToken];

  beforeAll(async () => {
    pipeline = await startEmbeddedPipeline({
      host: '127.0.0.1',
      port: 0,
      dataDir: directory,
      logger: pino({ level: 'silent' }),
    });
    const producer = await pipeline.messaging.createProducer();
    await new DeadLetters(producer, pino({ level: 'silent' })).failed(
      {
        topic: TOPICS.nodeBundles,
        partition: 5,
        offset: '17',
        key: 'web-1',
        value: Buffer.from('{"type":"node.bundle","broken":true}'),
        headers: { trace: 'abc' },
        timestamp: Date.now(),
      },
      {
        error: new Error('the distributor cannot take it'),
        attempts: 5,
        failedAt: new Date('2030-01-02T03:04:05Z'),
      },
      'policygen-distribution',
    );
    await producer.close();
  }, 120_000);

  afterAll(async () => {
    await pipeline?.stop();
    rmSync(directory, { recursive: true, force: true });
  });

  it('lists the dead-letter topics with the letters waiting, then the letters of one', async () => {
    const topics = await dlqCommand('list', ...at());
    expect(topics.stderr).toBe('');
    expect(topics.status).toBe(0);
    expect(topics.stdout).toContain(`${dlq}  1 waiting  1 in all\n`);

    const letters = await dlqCommand('list', TOPICS.nodeBundles, ...at());
    expect(letters.status).toBe(0);
    expect(letters.stdout.split('\n').slice(0, 4)).toEqual([
      `${dlq}  1 waiting  1 in all`,
      `0  waiting  from ${TOPICS.nodeBundles}/5/17  key web-1  5 attempt(s)  2030-01-02T03:04:05.000Z  policygen-distribution`,
      '  error  the distributor cannot take it',
      '  value  {"type":"node.bundle","broken":true} (36 bytes)',
    ]);
  });

  it('exits 2 on a bad option or without a credential, naming it', async () => {
    const badLimit = await dlqCommand('list', dlq, '--limit', '0', ...at());
    expect(badLimit.status).toBe(2);
    expect(badLimit.stderr).toContain('--limit: an integer from 1 to 500, not 0');
    const anonymous = await dlqCommand('list', '--url', pipeline.url);
    expect(anonymous.status).toBe(2);
    expect(anonymous.stderr).toContain('answered 401: give a credential with --token or POLICYGEN_TOKEN');
    const badOffset = await dlqCommand('replay', dlq, '--offset', 'first', ...at());
    expect(badOffset.status).toBe(2);
    expect(badOffset.stderr).toContain('--offset: an integer');
  });

  it('replays a letter once: a second replay of it says it was replayed and exits 1', async () => {
    const replay = await dlqCommand('replay', dlq, '--offset', '0', ...at());
    expect(replay.stderr).toBe('');
    expect(replay.status).toBe(0);
    expect(replay.stdout).toBe(`${dlq}: 1 replayed, 0 skipped\n  0  replayed to ${TOPICS.nodeBundles}\n`);

    const page = JSON.parse((await dlqCommand('list', dlq, '--json', ...at())).stdout) as DeadLetterPage;
    expect(page.items[0]?.replayed).toMatchObject({ by: 'bootstrap-admin' });

    const again = await dlqCommand('replay', dlq, '--offset', '0', ...at());
    expect(again.status).toBe(1);
    expect(again.stdout).toBe(`${dlq}: 0 replayed, 1 skipped\n  0  skipped: already replayed\n`);
  });
});
