import type { ChildProcess } from 'node:child_process';
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { extract } from 'tar-stream';
import { eventually, freePort, workspaceRoot } from '@policygen/testing-infra';

/**
 * `npm start`, exactly as the README gives it: the whole pipeline in one process on the in-process
 * bus and in-memory stores, driven over HTTP as a user would: a node fetches its bundle, a change
 * is made, the node fetches the new one.
 */

const PROPERTIES = 'rules/cfengine-community/properties.d/properties.json';

async function untar(body: Buffer): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  const unpack = extract();
  const done = new Promise<void>((resolve, reject) => {
    unpack.on('entry', (header, stream, next) => {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: unknown) => chunks.push(chunk as Buffer));
      stream.on('end', () => {
        files.set(header.name, Buffer.concat(chunks).toString('utf8'));
        next();
      });
    });
    unpack.on('finish', resolve);
    unpack.on('error', reject);
  });
  unpack.end(body);
  await done;
  return files;
}

describe('npm start: the embedded pipeline', () => {
  let directory: string;
  let started: ChildProcess | undefined;
  let exited = false;

  /** Signals `npm start` and its children as a terminal's Ctrl-C does: the whole process group. */
  const signalGroup = (signal: NodeJS.Signals): void => {
    try {
      if (started?.pid !== undefined) process.kill(-started.pid, signal);
    } catch {
      // already gone
    }
  };

  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'policygen-npm-start-'));
  });
  afterEach(() => {
    signalGroup('SIGKILL');
    rmSync(directory, { recursive: true, force: true });
  });

  it('serves the demo fleet from its relay, and a change over HTTP reaches the node', async () => {
    const port = await freePort();
    const logFile = join(directory, 'start.log');
    const log = openSync(logFile, 'w');
    exited = false;
    started = spawn('npm', ['start'], {
      cwd: workspaceRoot(),
      env: { ...process.env, PORT: String(port), TMPDIR: directory },
      detached: true,
      stdio: ['ignore', log, log],
    });
    closeSync(log);
    started.once('exit', () => {
      exited = true;
    });
    const output = (): string => readFileSync(logFile, 'utf8');
    await eventually(
      () => {
        if (exited) throw new Error(`npm start ended:\n${output()}`);
        return output().includes('Ctrl-C stops everything.');
      },
      { what: 'npm start to print how to use it', timeoutMs: 180_000, intervalMs: 200 },
    );
    const printed = output();
    const url = `http://127.0.0.1:${port}`;
    expect(printed).toContain(`Policygen is running on ${url}`);
    expect(printed).toMatch(/relay "root" serves 298 of them/);
    const token = /^Node token: (\S+)$/m.exec(printed)?.[1] ?? '';
    const apiToken = /^API token: (\S+)$/m.exec(printed)?.[1] ?? '';
    expect(token).not.toBe('');
    expect(apiToken).not.toBe('');
    // The lines a newcomer copies, run as printed, with the variables they set.
    const shell = (command: string): string =>
      execFileSync('bash', ['-c', command], {
        env: { ...process.env, API_TOKEN: apiToken, NODE_TOKEN: token },
        encoding: 'utf8',
      });
    const printedLine = (pattern: RegExp): string => {
      const line = printed.split('\n').find((candidate) => pattern.test(candidate));
      if (!line) throw new Error(`no line like ${pattern} in:\n${printed}`);
      return line.trim();
    };
    expect(
      JSON.parse(
        shell(printedLine(/^\s*curl -s -H "Authorization: Bearer \$API_TOKEN" \S+\/api\/v1\/nodes\//)),
      ),
    ).toMatchObject({
      id: 'web-par-001',
    });
    const anonymous = await fetch(`${url}/api/v1/nodes/web-par-001`);
    expect(anonymous.status).toBe(401);
    const lines = printed.split('\n');
    const putAt = lines.findIndex((line) => line.trim().startsWith('curl -s -X PUT'));
    const putCommand = `${lines[putAt]}\n${lines[putAt + 1]}`;

    const policies = `${url}/relay/nodes/web-par-001/policies`;
    const authorization = { authorization: `Bearer ${token}` };
    const first = await fetch(policies, { headers: authorization });
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toBe('application/x-tar');
    const before = await untar(Buffer.from(await first.arrayBuffer()));
    expect(before.get(PROPERTIES)).not.toContain('Hello from policygen start');
    expect((await fetch(policies)).status).toBe(401);

    expect(JSON.parse(shell(putCommand))).toMatchObject({ revision: 2 });
    const etag = first.headers.get('etag') ?? '';
    let after: Map<string, string> | undefined;
    await eventually(
      async () => {
        const response = await fetch(policies, { headers: { ...authorization, 'if-none-match': etag } });
        if (response.status === 304) return false;
        after = await untar(Buffer.from(await response.arrayBuffer()));
        return true;
      },
      { what: 'the relay serving the changed bundle', timeoutMs: 30_000, intervalMs: 20 },
    );
    expect(after?.get(PROPERTIES)).toContain('Hello from policygen start');
    await eventually(() => /\[revision 2\]\s+on relay root: web-par-001/.test(output()), {
      what: 'the flow of revision 2 printed',
    });

    // Ctrl-C stops every service and removes the data.
    signalGroup('SIGINT');
    await eventually(
      () =>
        /^stopping$/m.test(output()) &&
        !readdirSync(directory).some((name) => name.startsWith('policygen-start-')),
      { what: 'npm start to stop and remove its data', timeoutMs: 30_000 },
    );
  }, 240_000);
});
