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
    const collection = ['get', 'post'];
    const item = ['delete', 'get', 'put'];
    expect(methods).toEqual({
      '/api/v1/techniques': collection,
      '/api/v1/techniques/{id}/{version}': item,
      '/api/v1/directives': collection,
      '/api/v1/directives/{id}': item,
      '/api/v1/relationships': collection,
      '/api/v1/relationships/{from}/{kind}/{to}': item,
      '/api/v1/rules': collection,
      '/api/v1/rules/{id}': item,
      '/api/v1/groups': collection,
      '/api/v1/groups/{id}': item,
      '/api/v1/nodes': collection,
      '/api/v1/nodes/{id}': item,
      '/api/v1/relays': collection,
      '/api/v1/relays/{id}': item,
      '/api/v1/parameters': collection,
      '/api/v1/parameters/{name}': item,
      '/api/v1/settings': ['get', 'patch', 'put'],
      '/api/v1/changes': ['post'],
      '/api/v1/import': ['post'],
      '/api/v1/export': ['get'],
      '/api/v1/revision': ['get'],
      '/health': ['get'],
    });
    expect(
      Object.keys(document.paths['/api/v1/directives/{id}']?.['delete']?.responses ?? {}).sort(),
    ).toEqual(['204', '404', '409', '412']);
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

  it('answers /health with the revision it serves', async () => {
    expect((await suite.api.get('/health')).body).toEqual({ status: 'ok', revision: 0 });
    await suite.api.post('/api/v1/parameters', { name: 'p', value: 1 });
    expect((await suite.api.get('/health')).body).toEqual({ status: 'ok', revision: 1 });
  });
});
