import { expect } from 'chai';
import { json, type RouteDocs } from '../../shared/http/routeDocs.ts';
import { lauiSchema } from '../../shared/validation/validateRequest.ts';
import { openApiDocument, openApiPaths } from './openApiDocument.ts';

const INFO = { title: 'Test', version: '1.2.3', description: 'A test document' };
const pathSchema = { type: 'object', properties: { task_laui: lauiSchema }, required: ['task_laui'] };
const bodySchema = { type: 'object', properties: { name: { type: 'string' }, parent_laui: lauiSchema }, required: ['name'] };

const group = (overrides: Partial<RouteDocs> = {}): RouteDocs => ({
  tag: 'Things',
  description: 'Things',
  auth: 'bearer',
  schemas: { Thing: bodySchema },
  routes: [
    {
      method: 'POST',
      path: '/api/v1/thing/update/:task_laui',
      summary: 'Update',
      params: { path: pathSchema, query: { type: 'object', properties: { dry: { type: 'boolean' }, mode: { type: 'string' } }, required: ['mode'] } },
      body: { schema: bodySchema },
      responses: { 200: json('Done', { type: 'object' }) },
    },
  ],
  ...overrides,
});

type Operation = { operationId: string; security: unknown; parameters: Array<Record<string, unknown>>; requestBody: { content: Record<string, { schema: unknown }> }; responses: Record<string, unknown> };
const operation = (doc: ReturnType<typeof openApiDocument>, path: string, method: string): Operation => doc.paths[path]?.[method] as unknown as Operation;

describe('openApiPaths (Koa route paths as OpenAPI templates)', () => {
  it('given named parameters, when translated, then each becomes {name}', () => {
    expect(openApiPaths('/api/v1/logs/session/:session_id/content')).to.deep.equal(['/api/v1/logs/session/{session_id}/content']);
  });

  it('given an optional wildcard group, when translated, then the path comes without and with it', () => {
    expect(openApiPaths('/api/v1/logs/listItems{/*folder_path}')).to.deep.equal(['/api/v1/logs/listItems', '/api/v1/logs/listItems/{folder_path}']);
  });

  it('given syntax it cannot express, when translated, then it is refused', () => {
    expect(() => openApiPaths('/a/:b(\\d+)')).to.throw(/does not translate/);
  });
});

describe('openApiDocument', () => {
  it('given a documented route, when the document is built, then its parameters, body and named schemas are there', () => {
    const doc = openApiDocument([group()], INFO);
    expect(doc.openapi).to.equal('3.1.0');
    expect(doc.info).to.deep.equal(INFO);
    const op = operation(doc, '/api/v1/thing/update/{task_laui}', 'post');
    expect(op.operationId).to.equal('postThingUpdateByTaskLaui');
    expect(op.parameters).to.deep.equal([
      { name: 'task_laui', in: 'path', required: true, schema: { $ref: '#/components/schemas/ObjectId' } },
      { name: 'dry', in: 'query', required: false, schema: { type: 'boolean' } },
      { name: 'mode', in: 'query', required: true, schema: { type: 'string' } },
    ]);
    expect(op.requestBody.content['application/json']?.schema).to.deep.equal({ $ref: '#/components/schemas/Thing' });
    const components = (doc.components as { schemas: Record<string, unknown> }).schemas;
    expect(components.Thing).to.deep.equal({ type: 'object', properties: { name: { type: 'string' }, parent_laui: { $ref: '#/components/schemas/ObjectId' } }, required: ['name'] });
  });

  it('given a bearer route with a body, when built, then the wall, the body parser, 500 and 503 answers are added to what it declares', () => {
    const op = operation(openApiDocument([group()], INFO), '/api/v1/thing/update/{task_laui}', 'post');
    expect(Object.keys(op.responses)).to.deep.equal(['200', '400', '401', '403', '413', '415', '422', '500', '503']);
    expect(op.responses['422']).to.deep.include({ content: { 'application/json': { schema: { $ref: '#/components/schemas/ValidationError' } } } });
    expect(op.responses['403']).to.deep.equal({ $ref: '#/components/responses/Forbidden' });
    expect(op.responses['503']).to.deep.equal({ $ref: '#/components/responses/ServiceStarting' });
    expect(op.security).to.deep.equal([{ bearerAuth: [] }]);
  });

  it('given a public route that says it never answers 422, when built, then it has no 401, 403 nor 422', () => {
    const [route] = group().routes;
    const doc = openApiDocument([group({ auth: 'public', routes: [{ ...route!, responses: { 200: json('Done', { type: 'object' }), 422: null } }] })], INFO);
    const op = operation(doc, '/api/v1/thing/update/{task_laui}', 'post');
    expect(Object.keys(op.responses)).to.deep.equal(['200', '400', '413', '415', '500', '503']);
    expect(op.security).to.deep.equal([]);
  });

  it('given a public GET without parameters, when built, then only 400 (X-Read-After), 500 and 503 are added', () => {
    const doc = openApiDocument([group({ auth: 'public', routes: [{ method: 'GET', path: '/plain', summary: 'x', responses: { 200: json('Done', { type: 'object' }) } }] })], INFO);
    expect(Object.keys(operation(doc, '/plain', 'get').responses)).to.deep.equal(['200', '400', '500', '503']);
  });

  it('given the generic answers, when built, then each is a named response and x-unrouted lists those of requests no operation has', () => {
    const doc = openApiDocument([group()], INFO);
    const responses = (doc.components as { responses: Record<string, { description: string; content?: unknown }> }).responses;
    expect(Object.keys(responses)).to.include.members(['ServiceStarting', 'Forbidden', 'NotFound', 'MethodNotAllowed', 'BadRequest', 'UnsupportedEncoding']);
    expect(responses.NotFound?.content).to.deep.equal({ 'application/json': { schema: { $ref: '#/components/schemas/Detail' } } });
    const unrouted = doc['x-unrouted'] as { path: Record<string, unknown>; method: Record<string, unknown> };
    expect(Object.keys(unrouted.path)).to.deep.equal(['400', '404', '413', '415', '422', '503']);
    expect(unrouted.method['405']).to.deep.equal({ $ref: '#/components/responses/MethodNotAllowed' });
  });

  it('given a wildcard route, when built, then its path parameter is marked as matching across slashes', () => {
    const route = { method: 'GET', path: '/files{/*file_path}', summary: 'x', params: { path: { type: 'object', properties: { file_path: { type: 'string' } } } }, responses: {} } as const;
    const op = operation(openApiDocument([group({ routes: [route] })], INFO), '/files/{file_path}', 'get');
    expect(op.parameters).to.deep.equal([{ name: 'file_path', in: 'path', required: true, schema: { type: 'string' }, 'x-multi-segment': true }]);
  });

  it('given a response that also comes as another media type, when built, then both are its content', () => {
    const route = { method: 'GET', path: '/both', summary: 'x', responses: { 401: { description: 'No', schema: { type: 'object' }, alternatives: { 'text/html': { type: 'string' } } } } } as const;
    const op = operation(openApiDocument([group({ routes: [route] })], INFO), '/both', 'get');
    expect(op.responses['401']).to.deep.equal({ description: 'No', content: { 'application/json': { schema: { type: 'object' } }, 'text/html': { schema: { type: 'string' } } } });
  });

  it('given the auth kinds, when built, then each has its security requirements', () => {
    const route = { method: 'GET', path: '/x', summary: 'x', responses: {} } as const;
    const doc = openApiDocument(
      [
        group({
          routes: [
            { ...route, path: '/optional', auth: 'optional' },
            { ...route, path: '/either', auth: 'bearerOrCookie' },
            { ...route, path: '/cookie', auth: 'accessCookie' },
          ],
        }),
      ],
      INFO,
    );
    expect(operation(doc, '/optional', 'get').security).to.deep.equal([{}, { bearerAuth: [] }, { frontendToken: [] }]);
    expect(operation(doc, '/either', 'get').security).to.deep.equal([{ bearerAuth: [] }, { frontendToken: [] }, { sessionCookie: [] }]);
    expect(operation(doc, '/cookie', 'get').security).to.deep.equal([{ frontendToken: [] }]);
  });

  it('given a path parameter with no schema, when built, then it is refused', () => {
    const [route] = group().routes;
    expect(() => openApiDocument([group({ routes: [{ ...route!, params: {} }] })], INFO)).to.throw(/path parameter task_laui not declared/);
  });

  it('given one route documented twice, when built, then it is refused', () => {
    const [route] = group().routes;
    expect(() => openApiDocument([group({ routes: [route!, route!] })], INFO)).to.throw(/documented twice/);
  });

  it('given one name for two schemas, or two names for one, when built, then it is refused', () => {
    expect(() => openApiDocument([group(), group({ schemas: { Thing: { ...bodySchema } } })], INFO)).to.throw(/Two different schemas are named Thing/);
    expect(() => openApiDocument([group(), group({ schemas: { Other: bodySchema } })], INFO)).to.throw(/named both Thing and Other/);
  });
});
