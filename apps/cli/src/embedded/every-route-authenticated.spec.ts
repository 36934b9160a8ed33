import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Express } from 'express';
import pino from 'pino';
import type { EmbeddedPipeline } from './embedded-pipeline';
import { MOUNTS, startEmbeddedPipeline } from './embedded-pipeline';

/**
 * The public list (README, "Authentication"): what anyone may call. Everything else of every
 * service must answer 401 to a request without a credential.
 */
const PUBLIC_ROUTES = ['/health/live', '/health/ready', '/status', '/metrics'];

interface Route {
  readonly method: string;
  readonly path: string;
}

/** Every route an Express app's router holds (Nest registers each handler as one). */
function routesOf(app: Express): Route[] {
  const stack = (
    app as unknown as { router: { stack: { route?: { path: string; methods: Record<string, boolean> } }[] } }
  ).router.stack;
  const routes: Route[] = [];
  for (const { route } of stack) {
    // Middleware mounted on every path (request logs, HTTP metrics) is not an endpoint.
    if (!route || route.path.includes('{*')) continue;
    for (const method of Object.keys(route.methods).filter((name) => name !== '_all'))
      routes.push({ method: method.toUpperCase(), path: route.path });
  }
  return routes;
}

describe('every route of every service asks for a credential, but the public list', () => {
  const directory = mkdtempSync(join(tmpdir(), 'policygen-routes-'));
  let pipeline: EmbeddedPipeline;

  beforeAll(async () => {
    pipeline = await startEmbeddedPipeline({
      host: '127.0.0.1',
      port: 0,
      dataDir: directory,
      logger: pino({ level: 'silent' }),
    });
  }, 120_000);
  afterAll(async () => {
    await pipeline.stop();
    rmSync(directory, { recursive: true, force: true });
  });

  it('walks each router: anonymous requests get 401, but on /health/*, /status, /metrics and /api/docs', async () => {
    expect([...pipeline.services.keys()].sort()).toEqual(['', ...Object.values(MOUNTS)].sort());
    const answered: string[] = [];
    const open: string[] = [];
    const withoutChallenge: string[] = [];
    for (const [mount, app] of pipeline.services) {
      const routes = routesOf(app);
      expect({ mount, routes: routes.length }).toEqual({ mount, routes: expect.any(Number) as number });
      expect(routes.length).toBeGreaterThan(3);
      for (const { method, path } of routes) {
        // Path parameters get a value that exists nowhere: the credential is asked before anything is looked up.
        const concrete = path.replace(/:(\w+)/g, (_match, name: string) =>
          name === 'sha256' ? 'a'.repeat(64) : `x-${name}`,
        );
        const response = await fetch(`${pipeline.url}${mount}${concrete}`, {
          method,
          ...(method === 'GET' || method === 'HEAD'
            ? {}
            : { headers: { 'content-type': 'application/json' }, body: '{}' }),
          signal: AbortSignal.timeout(10_000),
        });
        await response.body?.cancel();
        answered.push(`${method} ${mount}${path}`);
        if (response.status !== 401) open.push(`${method} ${mount}${path} ${response.status}`);
        else if (!/^Bearer /.test(response.headers.get('www-authenticate') ?? ''))
          withoutChallenge.push(`${method} ${mount}${path}`);
      }
    }
    expect(answered.length).toBeGreaterThan(60);
    expect(withoutChallenge).toEqual([]);
    const publicRoutes = ['', ...Object.values(MOUNTS)].flatMap((mount) =>
      PUBLIC_ROUTES.map((path) => `GET ${mount}${path}`),
    );
    // The config API's description (OpenAPI and its Swagger UI) holds no data: public too.
    const described = open.filter((line) => line.startsWith('GET /api/docs'));
    expect(described.length).toBeGreaterThan(2);
    expect(
      open
        .filter((line) => !described.includes(line))
        .map((line) => line.split(' ').slice(0, 2).join(' '))
        .sort(),
    ).toEqual(publicRoutes.sort());
    expect(open.every((line) => !line.endsWith(' 401'))).toBe(true);
  }, 120_000);

  it('asks the event stream of every topic for a credential too', async () => {
    for (const path of ['/events/policygen.config.changes.v1', '/events/anything']) {
      const response = await fetch(`${pipeline.url}${path}`, { signal: AbortSignal.timeout(5_000) });
      await response.body?.cancel();
      expect(response.status).toBe(401);
    }
    const letter = await fetch(`${pipeline.url}/events/policygen.config.changes.v1/dead-letters`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(letter.status).toBe(401);
  });
});
