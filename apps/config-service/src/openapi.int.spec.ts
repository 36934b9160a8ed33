import { configServiceForSuite } from './testing/running-config-service';

interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
  components: { schemas: Record<string, Record<string, unknown>> };
}

/** The OpenAPI document describes the routes the service serves, with the fleet format's schemas. */
describe('config service: OpenAPI document and health', () => {
  const suite = configServiceForSuite('cs_openapi');

  it('serves the document at /api/docs-json, listing every route with its methods', async () => {
    const response = await suite.api.get<OpenApiDocument>('/api/docs-json');
    expect(response.status).toBe(200);
    const document = response.body;
    expect(document.openapi).toBe('3.1.0');
    const methods = Object.fromEntries(
      Object.entries(document.paths).map(([path, item]) => [
        path,
        Object.keys(item)
          .filter((key) => key !== 'parameters')
          .sort(),
      ]),
    );
    // Every route the router has, with its methods: the document cannot drift from the code.
    const router = (
      suite.app.getHttpAdapter().getInstance() as unknown as {
        router: { stack: { route?: { path: string; methods: Record<string, boolean> } }[] };
      }
    ).router;
    const routes: Record<string, string[]> = {};
    for (const { route } of router.stack) {
      // Middleware (request logging, HTTP metrics) is mounted on every path: it is not an endpoint.
      if (!route || route.path.startsWith('/api/docs') || route.path.includes('{*')) continue;
      const path = route.path.replace(/:(\w+)/g, '{$1}');
      routes[path] = [
        ...(routes[path] ?? []),
        ...Object.keys(route.methods).filter((method) => method !== '_all'),
      ].sort();
    }
    expect(Object.keys(routes).length).toBeGreaterThan(30);
    expect(methods).toEqual(routes);
    expect(routes).toMatchObject({
      '/health/ready': ['get'],
      '/metrics': ['get'],
      '/api/v1/failures': ['get'],
      '/api/v1/nodes/{id}/status': ['get'],
      '/api/v1/pipeline/stream': ['get'],
    });
    expect(
      Object.keys(document.paths['/api/v1/directives/{id}']?.['delete']?.responses ?? {}).sort(),
    ).toEqual(['204', '401', '403', '404', '409', '412']);
  });

  it('declares the bearer scheme for every route but the public ones', async () => {
    const document = (
      await suite.api.as(null).get<OpenApiDocument & Record<string, unknown>>('/api/docs-json')
    ).body;
    expect(document['security']).toEqual([{ bearer: [] }]);
    expect(document.components).toMatchObject({
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
    });
    const open: string[] = [];
    for (const [path, item] of Object.entries(document.paths))
      for (const [method, operation] of Object.entries(item as Record<string, { security?: unknown[] }>))
        if (Array.isArray(operation.security) && operation.security.length === 0)
          open.push(`${method} ${path}`);
    expect(open.sort()).toEqual(['get /health/live', 'get /health/ready', 'get /metrics', 'get /status']);
    expect(document.paths['/api/v1/api-tokens']?.['post']?.responses).toHaveProperty('401');
  });

  it("describes the entities with the engine's schemas, every reference resolvable", async () => {
    const document = (await suite.api.get<OpenApiDocument>('/api/docs-json')).body;
    const schemas = document.components.schemas;
    expect(schemas['Directive']).toMatchObject({
      type: 'object',
      required: ['id', 'name', 'technique'],
      additionalProperties: false,
      properties: { priority: { type: 'integer', minimum: 0, maximum: 10, default: 5 } },
    });
    expect(schemas['Node']?.['required']).toEqual(['id', 'hostname']);
    const references = [...JSON.stringify(document).matchAll(/"\$ref":"([^"]+)"/g)].map((match) => match[1]);
    expect(references.length).toBeGreaterThan(20);
    for (const reference of new Set(references)) {
      expect(reference).toMatch(/^#\/components\/schemas\/[A-Za-z_0-9]+$/);
      expect(schemas[(reference ?? '').split('/').pop() ?? '']).toBeDefined();
    }
  });

  it('serves the Swagger UI at /api/docs', async () => {
    const page = await suite.api.get('/api/docs');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.text).toContain('swagger-ui');
    expect((await suite.api.get('/api/docs/swagger-ui-bundle.js')).status).toBe(200);
  });

  it('is ready once its store and bus answer and the pipeline events are read; its status has the revision', async () => {
    const ready = await suite.api.get<{ status: string; info: Record<string, { status: string }> }>(
      '/health/ready',
    );
    expect(ready.status).toBe(200);
    expect(Object.keys(ready.body.info).sort()).toEqual(['bus', 'pipeline-events', 'store']);
    expect((await suite.api.get('/health/live')).status).toBe(200);
    expect((await suite.api.get('/status')).body).toEqual({ revision: 0 });
    await suite.api.post('/api/v1/parameters', { name: 'p', value: 1 });
    expect((await suite.api.get('/status')).body).toEqual({ revision: 1 });
  });
});
