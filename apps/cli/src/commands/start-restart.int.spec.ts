import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, freePort, ManagedProcess } from '@policygen/testing-infra';
import { CLI, runCli } from '../testing/cli-harness';

/**
 * `policygen start --data DIR` killed with SIGKILL and started again on DIR: the configuration
 * comes back at the last acknowledged revision, the relay serves every node the bundle of that
 * configuration, and the node token printed before the kill still fetches it.
 */

const NODE = 'web-par-001';

interface Run {
  readonly process: ManagedProcess;
  readonly printed: string;
  readonly apiToken: string;
  readonly nodeToken: string;
}

interface Served {
  readonly revision: number;
  readonly hash: string;
  readonly files: readonly { path: string; sha256: string }[];
}

describe('policygen start --data DIR: killed with SIGKILL, started again', () => {
  let directory: string;
  let dataDir: string;
  let url: string;
  let port: number;
  const runs: ManagedProcess[] = [];

  beforeEach(async () => {
    directory = mkdtempSync(join(tmpdir(), 'policygen-start-restart-'));
    dataDir = join(directory, 'data');
    port = await freePort();
    url = `http://127.0.0.1:${port}`;
  });
  afterEach(async () => {
    for (const run of runs.splice(0)) await run.stop();
    rmSync(directory, { recursive: true, force: true });
  });

  async function start(): Promise<Run> {
    const logFile = join(directory, `start-${runs.length + 1}.log`);
    const started = ManagedProcess.start({
      name: 'policygen start',
      command: process.execPath,
      args: [CLI, 'start', '--data', dataDir],
      logFile,
      env: { ...process.env, PORT: String(port), NO_COLOR: '1' },
    });
    runs.push(started);
    const output = (): string => readFileSync(logFile, 'utf8');
    await eventually(
      () => {
        if (!started.running)
          throw new Error(`policygen start ${started.describeExit()}:\n${started.logTail()}`);
        return output().includes('Ctrl-C stops everything.');
      },
      { what: 'policygen start to print how to use it', timeoutMs: 180_000, intervalMs: 100 },
    );
    const printed = output();
    return {
      process: started,
      printed,
      apiToken: /^API token: (\S+)$/m.exec(printed)?.[1] ?? '',
      nodeToken: /^Node token: (\S+)$/m.exec(printed)?.[1] ?? '',
    };
  }

  async function kill(run: Run): Promise<void> {
    run.process.kill();
    await run.process.exited;
  }

  /** Sets the node's `motd` property: the API's answer (its revision), or null when it did not answer. */
  async function change(run: Run, motd: string): Promise<number | null> {
    const asAdmin = { authorization: `Bearer ${run.apiToken}` };
    const node = (await (await fetch(`${url}/api/v1/nodes/${NODE}`, { headers: asAdmin })).json()) as {
      properties: object;
    };
    const response = await fetch(`${url}/api/v1/nodes/${NODE}`, {
      method: 'PUT',
      headers: { ...asAdmin, 'content-type': 'application/json' },
      body: JSON.stringify({ ...node, properties: { ...node.properties, motd } }),
    });
    if (!response.ok) throw new Error(`PUT answered ${response.status}: ${await response.text()}`);
    return ((await response.json()) as { revision: number }).revision;
  }

  async function served(nodeToken: string): Promise<{ status: number; bundle?: Served }> {
    const response = await fetch(`${url}/relay/nodes/${NODE}/policies`, {
      headers: { authorization: `Bearer ${nodeToken}`, accept: 'application/json' },
    });
    if (!response.ok) return { status: response.status };
    return { status: response.status, bundle: (await response.json()) as Served };
  }

  async function servedAt(nodeToken: string, revision: number): Promise<Served> {
    let last: { status: number; bundle?: Served } = { status: 0 };
    await eventually(
      async () => {
        last = await served(nodeToken);
        return last.bundle?.revision === revision;
      },
      { what: `the relay serving ${NODE} at revision ${revision}`, timeoutMs: 60_000, intervalMs: 100 },
    );
    return last.bundle as Served;
  }

  /** What `policygen generate` makes of the configuration the API exports now. */
  async function generated(run: Run): Promise<{ revision: number; hash: string; manifest: string }> {
    const exported = await fetch(`${url}/api/v1/export`, {
      headers: { authorization: `Bearer ${run.apiToken}` },
    });
    const revision = Number((exported.headers.get('etag') ?? '').replace(/\D/g, ''));
    const fleet = join(directory, `export-${revision}.json`);
    writeFileSync(fleet, await exported.text());
    const out = join(directory, `generated-${revision}`);
    const result = runCli([
      'generate',
      '--fleet',
      fleet,
      '--out',
      out,
      '--node',
      NODE,
      '--revision',
      String(revision),
    ]);
    expect(result.status).toBe(0);
    const manifest = readFileSync(join(out, NODE, 'policy-manifest.json'), 'utf8');
    return { revision, hash: (JSON.parse(manifest) as { hash: string }).hash, manifest };
  }

  it('serves, with the node token printed before the kill, the bundle of the last committed revision; and goes on', async () => {
    const first = await start();
    expect(first.printed).toContain('The demo fleet is loaded');
    let revision = 0;
    for (const motd of ['one', 'two', 'three']) revision = (await change(first, motd)) ?? revision;
    expect(revision).toBe(4);
    const before = await servedAt(first.nodeToken, revision);
    await kill(first);

    const second = await start();
    expect(second.printed).toContain(`Resumed from ${dataDir} at revision 4 (300 nodes)`);
    expect(second.apiToken).toBe(first.apiToken);
    const after = await served(first.nodeToken);
    expect(after.status).toBe(200);
    expect(after.bundle).toEqual(before);
    const expected = await generated(second);
    expect(expected.revision).toBe(4);
    expect(after.bundle?.hash).toBe(expected.hash);
    expect(after.bundle?.revision).toBe(4);

    // A change after the restart reaches the relay too, for the old token and the new one.
    expect(await change(second, 'four')).toBe(5);
    const next = await servedAt(first.nodeToken, 5);
    expect(next.hash).toBe((await generated(second)).hash);
    expect((await served(second.nodeToken)).bundle).toEqual(next);
  }, 400_000);

  it('killed in the middle of a burst of changes: every acknowledged change is there after the restart, and served', async () => {
    const first = await start();
    const acknowledged: number[] = [];
    const burst = (async () => {
      for (let index = 0; ; index++) {
        const revision = await change(first, `burst-${index}`).catch(() => null);
        if (revision === null) return;
        acknowledged.push(revision);
      }
    })();
    await eventually(() => acknowledged.length >= 8, {
      what: 'eight acknowledged changes',
      timeoutMs: 60_000,
    });
    await kill(first);
    await burst;
    const lastAcknowledged = acknowledged.at(-1) ?? 0;

    const second = await start();
    const resumedAt = Number(/Resumed from \S+ at revision (\d+)/.exec(second.printed)?.[1]);
    // The change in flight at the kill may or may not have been committed; none acknowledged is lost.
    expect(resumedAt).toBeGreaterThanOrEqual(lastAcknowledged);
    expect(resumedAt).toBeLessThanOrEqual(lastAcknowledged + 1);
    const bundle = await servedAt(first.nodeToken, resumedAt);
    const expected = await generated(second);
    expect(expected.revision).toBe(resumedAt);
    expect(bundle.hash).toBe(expected.hash);
    expect(JSON.parse(expected.manifest)).toMatchObject({
      configRevision: resumedAt,
      properties: { motd: `burst-${resumedAt - 2}` },
    });
  }, 400_000);
});
