import { Controller, Get, HttpCode, Module, NotFoundException, Post, Req } from '@nestjs/common';
import type { INestApplication } from '@nestjs/common';
import pino from 'pino';
import { Registry } from 'prom-client';
import { Writable } from 'node:stream';
import { z } from 'zod';
import { parsePrometheusText, promtoolProblems } from '@policygen/testing-infra';
import { createServiceApp } from './create-service-app';
import { env, EnvironmentError, readEnvironment } from './environment';
import type { ReadinessAnswer } from './readiness';
import { ServiceLifecycle } from './service-lifecycle';
import { ServiceShellModule } from './service-shell.module';
import { Public, Requires } from './auth/access';
import type { AuthenticatedRequest } from './auth/credential.guard';
import type { Principal } from './auth/principal';
import { AsyncLocalStorage } from 'node:async_hooks';

@Controller('things')
class ThingsController {
  @Get('broken')
  broken(): never {
    throw new Error('the handler broke');
  }

  @Get('unavailable')
  unavailable(): never {
    throw new Error('the store is restarting', {
      cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
    });
  }

  @Get('missing')
  missing(): never {
    throw new NotFoundException('no such thing');
  }

  @Get(':id')
  thing(): { ok: true } {
    return { ok: true };
  }
}

@Controller('guarded')
class GuardedController {
  @Post('write')
  @HttpCode(200)
  write(@Req() request: AuthenticatedRequest): Principal | undefined {
    return request.principal;
  }

  @Get('relays-only')
  @Requires({ kinds: ['relay'] })
  relaysOnly(): { ok: true } {
    return { ok: true };
  }

  @Get('admins-only')
  @Requires({ role: 'admin' })
  adminsOnly(): { ok: true } {
    return { ok: true };
  }

  @Get('open')
  @Public()
  open(): { ok: true } {
    return { ok: true };
  }
}

const CREDENTIALS: Record<string, Principal> = {
  'reader-token': { kind: 'api', name: 'a-reader', role: 'reader', tokenId: 'r' },
  'editor-token': { kind: 'api', name: 'an-editor', role: 'editor', tokenId: 'e' },
  'relay-token': { kind: 'relay', relayId: 'relay-eu' },
};

describe('ServiceShellModule', () => {
  const lines: Record<string, unknown>[] = [];
  let answer: ReadinessAnswer = { ready: false, reason: 'catching up: revision 3 of 7' };
  let app: INestApplication;
  let url: string;

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    const logger = pino({ base: { service: 'test-service' }, level: 'debug' }, sink);
    @Module({
      imports: [
        ServiceShellModule.forRoot({
          service: 'test-service',
          logger,
          registry: new Registry(),
          readiness: () => [
            { name: 'work', check: () => answer },
            { name: 'store', check: () => ({ ready: true }) },
          ],
          status: () => ({ revision: 7 }),
          authenticator: { authenticate: (token) => CREDENTIALS[token] ?? null },
        }),
      ],
      controllers: [ThingsController, GuardedController],
    })
    class TestModule {}
    app = await createServiceApp(TestModule);
    await app.listen(0, '127.0.0.1');
    url = await app.getUrl();
  });

  afterAll(() => app.close());

  const get = async (
    path: string,
  ): Promise<{ status: number; body: unknown; text: string; headers: Record<string, string> }> => {
    const response = await fetch(`${url}${path}`, { headers: { authorization: 'Bearer reader-token' } });
    const text = await response.text();
    let body: unknown = null;
    try {
      body = JSON.parse(text);
    } catch {
      body = null;
    }
    return { status: response.status, body, text, headers: Object.fromEntries(response.headers) };
  };

  it('is live at once, and ready only when every check is, with the reason in the body', async () => {
    expect(await get('/health/live')).toMatchObject({
      status: 200,
      body: { status: 'ok', service: 'test-service' },
    });
    const starting = await get('/health/ready');
    expect(starting.status).toBe(503);
    expect(starting.body).toMatchObject({
      status: 'error',
      error: { work: { status: 'down', reason: 'catching up: revision 3 of 7' } },
      info: { store: { status: 'up' } },
    });
    answer = { ready: true };
    expect(await get('/health/ready')).toMatchObject({ status: 200, body: { status: 'ok' } });
    answer = { ready: true, degraded: true, reason: '2 nodes fail', details: { failingNodes: 2 } };
    expect(await get('/health/ready')).toMatchObject({
      status: 200,
      body: {
        status: 'ok',
        degraded: true,
        info: { work: { degraded: true, failingNodes: 2, reason: '2 nodes fail' } },
      },
    });
    expect(await get('/status')).toMatchObject({ status: 200, body: { revision: 7 } });
  });

  it('turns unready as soon as it starts stopping', async () => {
    answer = { ready: true };
    app.get(ServiceLifecycle).stopping = true;
    try {
      expect(await get('/health/ready')).toMatchObject({
        status: 503,
        body: { error: { lifecycle: { reason: 'stopping' } } },
      });
    } finally {
      app.get(ServiceLifecycle).stopping = false;
    }
  });

  it('answers a throwing handler with a JSON 500, logged as one JSON line with the stack', async () => {
    lines.length = 0;
    const broken = await get('/things/broken?secret=1');
    expect(broken).toMatchObject({
      status: 500,
      body: { statusCode: 500, message: 'Internal server error' },
    });
    expect(broken.text).not.toContain('the handler broke');
    const logged = lines.find((line) => line['level'] === 50);
    expect(logged).toMatchObject({
      service: 'test-service',
      req: { method: 'GET', path: '/things/broken' },
      res: { statusCode: 500 },
      err: { message: 'the handler broke' },
    });
    expect(String((logged?.['err'] as { stack?: string }).stack)).toContain('ThingsController.broken');
    expect(typeof logged?.['responseTime']).toBe('number');
  });

  it('answers a dependency that is away with a 503 and Retry-After, logged like a 500', async () => {
    lines.length = 0;
    const unavailable = await get('/things/unavailable');
    expect(unavailable).toMatchObject({ status: 503, body: { statusCode: 503 } });
    expect(unavailable.headers['retry-after']).toBe('5');
    expect(unavailable.text).not.toContain('ECONNREFUSED');
    expect(lines.find((line) => line['level'] === 50)).toMatchObject({
      res: { statusCode: 503 },
      err: { message: expect.stringContaining('ECONNREFUSED') },
    });
  });

  it('logs every request with method, path, status and duration; client errors stay 4xx', async () => {
    lines.length = 0;
    expect((await get('/things/missing')).status).toBe(404);
    expect((await get('/things/42')).status).toBe(200);
    expect(lines.map((line) => [line['level'], line['req'], line['res']])).toEqual([
      [40, { method: 'GET', path: '/things/missing' }, { statusCode: 404 }],
      [30, { method: 'GET', path: '/things/42' }, { statusCode: 200 }],
    ]);
    expect(JSON.stringify(lines)).not.toMatch(/authorization|cookie/i);
  });

  it('logs requests without running them in an AsyncLocalStorage (which would slow every promise of the process)', async () => {
    const run = jest.spyOn(AsyncLocalStorage.prototype, 'run');
    const enterWith = jest.spyOn(AsyncLocalStorage.prototype, 'enterWith');
    try {
      lines.length = 0;
      expect((await get('/things/42')).status).toBe(200);
      expect(lines.map((line) => line['msg'])).toEqual([
        expect.stringMatching(/^GET \/things\/42 200 \d+ ms$/),
      ]);
      expect(run).not.toHaveBeenCalled();
      expect(enterWith).not.toHaveBeenCalled();
    } finally {
      run.mockRestore();
      enterWith.mockRestore();
    }
  });

  it('serves its metrics with the HTTP durations by route pattern', async () => {
    await get('/things/1');
    await get('/things/2');
    const metrics = await get('/metrics');
    expect(metrics.status).toBe(200);
    const families = parsePrometheusText(metrics.text);
    expect(families.get('policygen_http_request_duration_seconds')?.type).toBe('HISTOGRAM');
    const routes = (families.get('policygen_http_request_duration_seconds_count')?.samples ?? []).map(
      (sample) => sample.labels,
    );
    expect(routes).toContainEqual({ method: 'GET', route: '/things/:id', status_code: '200' });
    expect(routes).toContainEqual({ method: 'GET', route: '/things/broken', status_code: '500' });
    expect(promtoolProblems(metrics.text)).toEqual([]);
  });
  it('asks every route not marked public for a credential: 401 without or unknown, 403 when not allowed', async () => {
    const call = async (method: string, path: string, token?: string) => {
      const response = await fetch(`${url}${path}`, {
        method,
        headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
      });
      return {
        status: response.status,
        challenge: response.headers.get('www-authenticate'),
        text: await response.text(),
      };
    };
    expect(await call('GET', '/things/1')).toMatchObject({
      status: 401,
      challenge: 'Bearer realm="policygen-test-service"',
    });
    expect((await call('GET', '/things/1', 'guessed')).status).toBe(401);
    expect((await call('GET', '/things/1', 'reader-token')).status).toBe(200);
    expect((await call('GET', '/guarded/open')).status).toBe(200);
    // Any method but GET and HEAD needs an editor; a relay's credential is no API token.
    expect((await call('POST', '/guarded/write', 'reader-token')).status).toBe(403);
    expect((await call('POST', '/guarded/write', 'relay-token')).status).toBe(403);
    const written = await call('POST', '/guarded/write', 'editor-token');
    expect({ status: written.status, principal: JSON.parse(written.text) as unknown }).toEqual({
      status: 200,
      principal: CREDENTIALS['editor-token'],
    });
    expect((await call('GET', '/guarded/admins-only', 'editor-token')).status).toBe(403);
    expect((await call('GET', '/guarded/relays-only', 'reader-token')).status).toBe(403);
    expect((await call('GET', '/guarded/relays-only', 'relay-token')).status).toBe(200);
    for (const path of ['/health/live', '/health/ready', '/status', '/metrics'])
      expect({ path, status: (await call('GET', path)).status }).not.toEqual({ path, status: 401 });
    const metrics = await call('GET', '/metrics');
    expect(metrics.text).toMatch(
      /policygen_http_auth_refusals_total\{service="test-service",status="401"\} [1-9]/,
    );
    expect(metrics.text).toMatch(
      /policygen_http_auth_refusals_total\{service="test-service",status="403"\} [1-9]/,
    );
  });
});

describe('readEnvironment', () => {
  const schema = z.object({
    KAFKA_BROKERS: env.brokers(),
    PORT: env.port(3002),
    REDIS_URL: env.url(),
    SECRET: env.secret().optional(),
  });

  it('reads the variables, with defaults, empty values counting as unset', () => {
    expect(
      readEnvironment(schema, { KAFKA_BROKERS: 'k1:9092, k2:9093', PORT: '', REDIS_URL: 'redis://r:6379' }),
    ).toEqual({
      KAFKA_BROKERS: ['k1:9092', 'k2:9093'],
      PORT: 3002,
      REDIS_URL: 'redis://r:6379',
    });
  });

  it('names every wrong or missing variable at once', () => {
    let error: unknown;
    try {
      readEnvironment(schema, { KAFKA_BROKERS: 'nowhere', PORT: 'eighty', SECRET: 'short' });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(EnvironmentError);
    const problems = (error as EnvironmentError).problems;
    expect(problems.map((problem) => problem.split(':')[0])).toEqual([
      'KAFKA_BROKERS',
      'PORT',
      'REDIS_URL',
      'SECRET',
    ]);
    expect(problems[1]).toContain('"eighty"');
  });
});
