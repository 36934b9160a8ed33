import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '@policygen/testing-browser';
import type { FakePipelineApi } from './testing/fake-pipeline-api';
import { FAKE_FAILURES, startFakePipelineApi } from './testing/fake-pipeline-api';

const workspace = join(__dirname, '..', '..', '..');
const built = join(workspace, 'dist', 'dashboard');
const artifacts = join(workspace, 'artifacts');
/** Served under a path of its own, as the services may mount it: its asset URLs are relative. */
const MOUNT = '/ops/dashboard';

/** The newest modification time of the page's sources under a path (tests and their helpers are not). */
function newest(path: string): number {
  const stats = statSync(path);
  if (!stats.isDirectory()) return path.endsWith('.spec.ts') ? 0 : stats.mtimeMs;
  if (path.endsWith('/testing')) return 0;
  return Math.max(0, ...readdirSync(path).map((name) => newest(join(path, name))));
}

/** The test runs the built dashboard: one built before its latest source change would mislead. */
function expectFreshBuild(): void {
  const index = join(built, 'index.html');
  if (!existsSync(index)) throw new Error(`${index} is missing: build the dashboard first (npm run build)`);
  const app = join(workspace, 'apps', 'dashboard');
  const sources = Math.max(
    newest(join(app, 'index.html')),
    newest(join(app, 'vite.config.ts')),
    newest(join(app, 'src')),
  );
  if (sources > statSync(index).mtimeMs) {
    throw new Error(`${built} is older than apps/dashboard's sources: build it again (npm run build)`);
  }
}

async function numberIn(page: Page, testId: string): Promise<number> {
  return Number(await page.getByTestId(testId).textContent());
}

describe('the dashboard in Chromium, against a fake pipeline API', () => {
  let api: FakePipelineApi | undefined;
  let browser: Browser | undefined;

  beforeAll(async () => {
    expectFreshBuild();
    api = await startFakePipelineApi({
      staticDir: built,
      mountPath: MOUNT,
      snapshotIntervalMs: 250,
      failuresAfterMs: 1_500,
    });
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await api?.close();
  });

  it('follows the stream without a reload, lists the failing nodes and opens one', async () => {
    if (!api || !browser) throw new Error('the fake API or the browser did not start');
    const page = await browser.newPage({ viewport: { width: 1440, height: 1100 } });
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console error: ${message.text()}`);
    });
    let loads = 0;
    page.on('load', () => (loads += 1));

    await page.goto(`${api.url}${MOUNT}/`);
    await page.waitForSelector('[data-testid="live-indicator"][data-state="live"]');

    // The relay stage's sample count grows with the snapshots the stream pushes.
    await page.waitForFunction(
      () => Number(document.querySelector('[data-testid="lag-samples"]')?.textContent) > 0,
    );
    const before = await numberIn(page, 'lag-samples');
    await page.waitForFunction(
      (previous) => Number(document.querySelector('[data-testid="lag-samples"]')?.textContent) > previous,
      before,
    );
    expect(await numberIn(page, 'lag-samples')).toBeGreaterThan(before);
    expect(await page.getByTestId('lag-relay-p99').textContent()).toMatch(/\d+ ms/);

    // The failures arrive later: the list is fetched again when the failing count changes.
    const failure = FAKE_FAILURES[0];
    if (!failure) throw new Error('the fake has no failure');
    const row = page.locator(`[data-testid="failure-row"][data-node-id="${failure.nodeId}"]`);
    await row.waitFor();
    expect(await row.getAttribute('data-code')).toBe(failure.code);
    expect(await row.textContent()).toContain(failure.code);
    expect(await page.getByTestId('failure-row').count()).toBe(FAKE_FAILURES.length);

    // A relay behind is highlighted, in its place in the tree.
    expect(
      await page.locator('[data-testid="relay-row"][data-relay-id="relay-eu-paris"]').getAttribute('class'),
    ).toContain('behind');

    // A consumer group expands to its partitions.
    await page.locator('[data-testid="consumer-row"]', { hasText: 'policygen-generator' }).click();
    expect(await page.getByTestId('consumer-partition-row').count()).toBe(3);

    await mkdir(artifacts, { recursive: true });
    await page.screenshot({ path: join(artifacts, 'dashboard-overview.png'), fullPage: true });

    await row.click();
    const detail = page.getByTestId('node-detail');
    await detail.waitFor({ state: 'visible' });
    await page.getByTestId('node-failure').waitFor();
    expect(await page.getByTestId('node-detail-id').textContent()).toBe(failure.nodeId);
    expect(await page.getByTestId('node-outcome').textContent()).toBe('failed');
    await page.locator('[data-testid="node-explain"] .json-view').waitFor();
    expect(await page.getByTestId('node-explain').textContent()).toContain('rule-web');

    await page.screenshot({ path: join(artifacts, 'dashboard.png'), fullPage: true });

    expect(loads).toBe(1);
    expect(problems).toEqual([]);
    expect(api.requests.filter((request) => request.path === '/api/v1/pipeline/stream')).toHaveLength(1);
    await page.close();
  });

  it('sends the token of ?token= as a bearer token on every API call, the stream included', async () => {
    if (!api || !browser) throw new Error('the fake API or the browser did not start');
    const context = await browser.newContext();
    const page = await context.newPage();
    const first = api.requests.length;

    await page.goto(`${api.url}${MOUNT}/?token=s3cret`);
    await page.waitForSelector('[data-testid="live-indicator"][data-state="live"]');
    await page.waitForFunction(
      () => Number(document.querySelector('[data-testid="lag-samples"]')?.textContent) > 0,
    );
    const before = await numberIn(page, 'lag-samples');
    await page.waitForFunction(
      (previous) => Number(document.querySelector('[data-testid="lag-samples"]')?.textContent) > previous,
      before,
    );

    const calls = api.requests.slice(first).filter((request) => request.path.startsWith('/api/'));
    expect(calls.map((call) => call.path)).toContain('/api/v1/pipeline/stream');
    expect(calls.filter((call) => call.authorization !== 'Bearer s3cret')).toEqual([]);
    // Taken out of the address bar, kept for the next visit.
    expect(new URL(page.url()).searchParams.has('token')).toBe(false);
    expect(await page.evaluate(() => window.localStorage.getItem('policygen.dashboard.token'))).toBe(
      's3cret',
    );
    await context.close();
  });
});
