import type { ChildProcess } from 'node:child_process';
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '@policygen/testing-browser';
import {
  eventually,
  freePort,
  parsePrometheusText,
  promtoolProblems,
  workspaceRoot,
} from '@policygen/testing-infra';

/**
 * What ops see of `policygen start`, over HTTP, on the command line and in the dashboard in a real
 * Chromium: readiness turning 200 once every service has caught up, every service's metrics, a
 * change's lag, nodes a change breaks (listed with code and directive, live) and mends.
 */

const CLI = join(workspaceRoot(), 'dist', 'cli', 'policygen.js');
const BROKEN_DIRECTIVE = 'cron-db-backup';
/** The admin's token `policygen start` takes from its environment instead of generating one. */
const ADMIN_TOKEN = 'observability-test-admin-token-0123456789';
const AS_ADMIN = { authorization: `Bearer ${ADMIN_TOKEN}` };

interface Answer {
  readonly status: number;
  readonly body: unknown;
}

describe('policygen start: health, metrics, failures, status and lag, and the live dashboard', () => {
  let directory: string;
  let started: ChildProcess | undefined;
  let url = '';
  let browser: Browser | undefined;
  let page: Page | undefined;
  const readinessSeen: number[] = [];
  let output: () => string = () => '';

  const get = async (path: string): Promise<Answer> => {
    const response = await fetch(`${url}${path}`, { headers: AS_ADMIN });
    const text = await response.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // text it is
    }
    return { status: response.status, body };
  };
  const put = async (path: string, body: unknown): Promise<number> =>
    (
      await fetch(`${url}${path}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json', ...AS_ADMIN },
        body: JSON.stringify(body),
      })
    ).status;
  const cli = (...args: string[]): { status: number | null; stdout: string; stderr: string } => {
    const result = spawnSync(process.execPath, [CLI, ...args], {
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, POLICYGEN_TOKEN: ADMIN_TOKEN },
    });
    return { status: result.status, stdout: result.stdout, stderr: result.stderr };
  };

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), 'policygen-observability-'));
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    const logFile = join(directory, 'start.log');
    const log = openSync(logFile, 'w');
    started = spawn(process.execPath, [CLI, 'start'], {
      env: {
        ...process.env,
        PORT: String(port),
        TMPDIR: directory,
        NO_COLOR: '1',
        POLICYGEN_ADMIN_TOKEN: ADMIN_TOKEN,
      },
      stdio: ['ignore', log, log],
    });
    closeSync(log);
    output = () => readFileSync(logFile, 'utf8');
    // Readiness from the moment the port answers: 503 while the services start and catch up.
    let exited = false;
    started.once('exit', () => (exited = true));
    await eventually(
      async () => {
        if (exited) throw new Error(`policygen start ended:\n${output()}`);
        try {
          readinessSeen.push((await fetch(`${url}/health/ready`)).status);
        } catch {
          // not listening yet
        }
        return output().includes('Ctrl-C stops everything.') && readinessSeen.at(-1) === 200;
      },
      { what: 'policygen start to be ready', timeoutMs: 180_000, intervalMs: 25 },
    );
    browser = await launchChromium();
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    started?.kill('SIGKILL');
    rmSync(directory, { recursive: true, force: true });
  });

  it('is not ready until every service has caught up, then ready, naming each check', async () => {
    expect(readinessSeen).toContain(503);
    expect(readinessSeen.at(-1)).toBe(200);
    const ready = (await get('/health/ready')).body as { status: string; info: Record<string, unknown> };
    expect(ready.status).toBe('ok');
    expect(Object.keys(ready.info)).toEqual(
      expect.arrayContaining(['store', 'generator.generation', 'distribution.bundles', 'distribution.disk']),
    );
    expect((await get('/health/live')).status).toBe(200);
  });

  it("serves every service's metrics under its mount, as Prometheus reads them", async () => {
    const expected: Record<string, string[]> = {
      '/metrics': [
        'policygen_config_changes_total',
        'policygen_config_outbox_backlog',
        'policygen_kafka_consumer_lag',
      ],
      '/generator/metrics': [
        'policygen_generator_nodes_total',
        'policygen_generator_nodes_failing',
        'policygen_generator_held_nodes',
        'policygen_generator_cache_requests_total',
        'policygen_generator_engine_cache_entries',
        'policygen_generator_engine_rendered_bytes',
        'policygen_generator_known_blobs',
        'policygen_kafka_consumer_lag',
      ],
      '/distribution/metrics': ['policygen_pipeline_lag_seconds', 'policygen_kafka_consumer_lag'],
    };
    for (const [path, names] of Object.entries(expected)) {
      const text = (await get(path)).body as string;
      const families = parsePrometheusText(text);
      for (const name of [...names, 'policygen_http_request_duration_seconds'])
        expect({ path, name, present: families.has(name) }).toEqual({ path, name, present: true });
      // prom-client's own process metrics are not ours to rename; every policygen_ one is clean.
      expect(promtoolProblems(text).filter((problem) => problem.startsWith('policygen_'))).toEqual([]);
    }
    // What the generator's memory holds, once it generated the demo: its caches are not empty.
    const generator = parsePrometheusText((await get('/generator/metrics')).body as string);
    const held = (name: string, labels: Record<string, string> = {}) =>
      generator
        .get(name)
        ?.samples.find((sample) =>
          Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
        )?.value ?? 0;
    expect(held('policygen_generator_engine_cache_entries', { cache: 'plans' })).toBeGreaterThan(0);
    expect(held('policygen_generator_engine_cache_entries', { cache: 'rendered' })).toBeGreaterThan(0);
    expect(held('policygen_generator_engine_rendered_bytes')).toBeGreaterThan(0);
    expect(held('policygen_generator_known_blobs')).toBeGreaterThan(0);
    // The Grafana dashboard of deploy/ plots only metrics the services really have.
    const served = new Set<string>();
    for (const path of Object.keys(expected))
      for (const name of parsePrometheusText((await get(path)).body as string).keys()) served.add(name);
    const grafana = readFileSync(
      join(workspaceRoot(), 'deploy', 'grafana', 'dashboards', 'policygen.json'),
      'utf8',
    );
    const plotted = new Set([...grafana.matchAll(/policygen_[a-z_]+/g)].map((match) => match[0]));
    expect(plotted.size).toBeGreaterThan(5);
    // A relay's own sync metrics come from the relays below root, which `start` runs none of: a
    // relay's test reads them (e2e distribution.int.spec.ts).
    expect([...plotted].filter((name) => !served.has(name) && !name.startsWith('policygen_relay_'))).toEqual(
      [],
    );

    const lag = parsePrometheusText((await get('/distribution/metrics')).body as string).get(
      'policygen_pipeline_lag_seconds_count',
    );
    expect(lag?.samples.map((sample) => sample.labels['stage'])).toEqual(
      expect.arrayContaining(['generated', 'distributed', 'relay']),
    );
  });

  it('shows a change in the lag panel and the failing nodes it causes, live, then their recovery', async () => {
    page = await (browser as Browser).newPage({ viewport: { width: 1440, height: 1100 } });
    let reloads = 0;
    page.on('load', () => reloads++);
    await page.goto(`${url}/?token=${ADMIN_TOKEN}`);
    const samples = async (): Promise<number> => Number(await page?.getByTestId('lag-samples').textContent());
    await eventually(async () => (await samples()) > 0, {
      what: 'the lag panel to show the import',
      timeoutMs: 30_000,
    });
    const before = await samples();

    const node = (await get('/api/v1/nodes/web-par-001')).body as { properties: Record<string, unknown> };
    expect(
      await put('/api/v1/nodes/web-par-001', {
        ...node,
        properties: { ...node.properties, motd: 'lag check' },
      }),
    ).toBe(200);
    await eventually(async () => (await samples()) > before, {
      what: 'the lag panel to count the change',
      timeoutMs: 30_000,
    });

    const directive = (await get(`/api/v1/directives/${BROKEN_DIRECTIVE}`)).body as { require: string[] };
    expect(
      await put(`/api/v1/directives/${BROKEN_DIRECTIVE}`, {
        ...directive,
        require: [...directive.require, 'dir-app'],
      }),
    ).toBe(200);
    const row = page.getByTestId('failure-row').filter({ hasText: 'MISSING_DEPENDENCY' }).first();
    await row.waitFor({ timeout: 30_000 });
    expect(await row.textContent()).toContain(BROKEN_DIRECTIVE);
    const failing = (await row.getAttribute('data-node-id')) ?? '';
    expect(failing).toMatch(/^db-/);
    await row.click();
    await page.getByTestId('node-detail').waitFor({ state: 'visible' });
    mkdirSync(join(workspaceRoot(), 'artifacts'), { recursive: true });
    await page.screenshot({ path: join(workspaceRoot(), 'artifacts', 'dashboard-live.png'), fullPage: true });

    // Over HTTP, on the console, and on the command line.
    const status = (await get(`/api/v1/nodes/${failing}/status`)).body as {
      failure: { code: string; directiveIds: string[] } | null;
    };
    expect(status.failure).toMatchObject({
      code: 'MISSING_DEPENDENCY',
      directiveIds: expect.arrayContaining([BROKEN_DIRECTIVE]),
    });
    const failures = (await get('/api/v1/failures?code=MISSING_DEPENDENCY&limit=1000')).body as {
      total: number;
      items: { nodeId: string }[];
    };
    expect(failures.total).toBeGreaterThan(0);
    expect(failures.items.map((item) => item.nodeId)).toContain(failing);
    await eventually(
      () =>
        new RegExp(`FAILED db-\\S+ MISSING_DEPENDENCY \\(directive ${BROKEN_DIRECTIVE}`).test(output()) &&
        /\d+ node\(s\) fail: MISSING_DEPENDENCY ×\d+/.test(output()),
      { what: 'the console to name the failures' },
    );
    const statusCommand = cli('status', '--url', url, '--settle', '0');
    expect(statusCommand.status).toBe(1);
    expect(statusCommand.stdout).toContain('MISSING_DEPENDENCY');
    const json = JSON.parse(cli('status', '--url', url, '--json', '--settle', '0').stdout) as { ok: boolean };
    expect(json.ok).toBe(false);

    expect(await put(`/api/v1/directives/${BROKEN_DIRECTIVE}`, directive)).toBe(200);
    await eventually(async () => ((await get('/api/v1/failures')).body as { total: number }).total === 0, {
      what: 'the failures to clear',
      timeoutMs: 30_000,
    });
    expect(((await get(`/api/v1/nodes/${failing}/status`)).body as { failure: unknown }).failure).toBeNull();
    await page.getByTestId('failure-row').first().waitFor({ state: 'detached', timeout: 30_000 });
    expect(cli('status', '--url', url).status).toBe(0);
    expect(reloads).toBe(1);
  });

  it('gives the lag per stage on the command line', () => {
    const lag = cli('lag', '--url', url, '--json');
    expect(lag.status).toBe(0);
    const report = JSON.parse(lag.stdout) as { steady: { stage: string; count: number }[] };
    expect(report.steady.find((stage) => stage.stage === 'relay')?.count).toBeGreaterThan(0);
    const table = cli('lag', '--url', url);
    expect(table.stdout).toMatch(/relay\s+\d+\s+\d+ ms/);
    expect(cli('lag', '--url', 'not-a-url').status).toBe(2);
  });
});
