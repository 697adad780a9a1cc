import { expect } from 'chai';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { get, type IncomingHttpHeaders } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type Router from '@koa/router';
import type Koa from 'koa';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { chromium } from 'playwright-core';
import type { AppState } from '../../shared/http/AppState.ts';
import { startTestService, type TestService } from '../../test/support/testService.ts';
import { recordedFetch } from '../../test/support/trafficRecorder.ts';
import { API_ROUTE_DOCS } from './apiRouteDocs.ts';
import { DOCS_CSP } from './apiReferenceRoutes.ts';
import { openApiPaths, templateParams } from './openApiDocument.ts';

/**
 * The API reference against the real service: every route its routers register is in the document
 * and every documented route is served; the document holds together (refs, path parameters,
 * schemas a 2020-12 validator compiles); real answers match their documented schemas; the auth each
 * doc declares is what the route does; the docs page loads its viewer from the service under a
 * strict Content-Security-Policy.
 */

type Json = Record<string, unknown>;
type Document = Json & { paths: Record<string, Record<string, Json>>; components: { schemas: Record<string, unknown> } };

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];
const SAMPLE_LAUI = '0123456789abcdef01234567';

/** `METHOD path` of every route the app's routers register (HEAD is GET's twin). */
const registeredRoutes = (app: Koa<AppState>): { keys: Set<string>; routers: Array<Router<AppState>> } => {
  const keys = new Set<string>();
  const routers: Array<Router<AppState>> = [];
  for (const middleware of app.middleware) {
    const router = (middleware as { router?: Router<AppState> }).router;
    if (!router) continue;
    routers.push(router);
    for (const layer of router.stack) for (const method of layer.methods) if (method !== 'HEAD') keys.add(`${method} ${layer.path}`);
  }
  return { keys, routers };
};

const documentedRoutes = (): Set<string> => new Set(API_ROUTE_DOCS.flatMap((group) => group.routes.map((route) => `${route.method} ${route.path}`)));

const operations = (doc: Document): Array<{ path: string; method: string; op: Json }> =>
  Object.entries(doc.paths).flatMap(([path, item]) => METHODS.filter((method) => item[method] !== undefined).map((method) => ({ path, method, op: item[method] as Json })));

/** A URL for a template: each parameter a LAUI-shaped sample. */
const sampleUrl = (path: string): string => path.replace(/\{[^}]+\}/g, SAMPLE_LAUI);

/** Every value under `node`, with its JSON pointer. */
const walk = (node: unknown, visit: (value: unknown) => void): void => {
  visit(node);
  if (Array.isArray(node)) node.forEach((inner) => walk(inner, visit));
  else if (node !== null && typeof node === 'object') Object.values(node).forEach((inner) => walk(inner, visit));
};

const resolvePointer = (doc: unknown, ref: string): unknown =>
  ref
    .slice(2)
    .split('/')
    .map((part) => decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<unknown>((at, key) => (at !== null && typeof at === 'object' ? (at as Json)[key] : undefined), doc);

/** A 2020-12 validator of the document's schemas: components under one id, `#/components/schemas/X` refs pointed there. */
const schemaValidators = (doc: Document) => {
  const ajv = new Ajv2020({ strict: true, strictTypes: false, allowUnionTypes: true, formats: { 'iso-datetime': true } });
  const repoint = (schema: unknown): unknown => JSON.parse(JSON.stringify(schema).replace(/"#\/components\/schemas\//g, '"https://openapi.local/components#/$defs/'));
  ajv.addSchema({ $id: 'https://openapi.local/components', $defs: repoint(doc.components.schemas) as object });
  const compiled = new Map<string, ValidateFunction>();
  return (schema: unknown): ValidateFunction => {
    const key = JSON.stringify(schema);
    let validate = compiled.get(key);
    if (!validate) {
      validate = ajv.compile(repoint(schema) as object);
      compiled.set(key, validate);
    }
    return validate;
  };
};

describe('API reference (OpenAPI document and docs page) on the real service', function () {
  this.timeout(120_000);
  let svc: TestService;
  let doc: Document;
  let token: string;

  /** A GET through node:http: fetch turns a request with If-None-Match into a no-cache one, which never gets a 304. */
  const plainGet = (path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> =>
    new Promise((resolve, reject) => {
      get(new URL(path, svc.service.url), { headers }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }));
        response.on('error', reject);
      }).on('error', reject);
    });

  before(async () => {
    svc = await startTestService();
    ({ token } = await svc.login());
    const reply = await svc.client().get('/api/v1/openapi.json');
    expect(reply.status).to.equal(200);
    doc = reply.json as Document;
  });
  after(async () => svc.stop());

  describe('coverage', () => {
    it('given the routers the service mounts, when their routes are listed, then each is documented and each doc has its route', () => {
      const { keys: registered } = registeredRoutes(svc.service.app);
      const documented = documentedRoutes();
      expect(registered.size).to.be.greaterThan(50);
      expect([...registered].filter((key) => !documented.has(key)), 'registered without a doc').to.deep.equal([]);
      // createApp answers /healthz itself, ahead of every router.
      expect([...documented].filter((key) => !registered.has(key)), 'documented without a route').to.deep.equal(['GET /healthz']);
    });

    it('given the served document, when its operations are matched against the routers, then every one is served and every route is in it', async () => {
      const { keys: registered, routers } = registeredRoutes(svc.service.app);
      for (const { path, method } of operations(doc)) {
        if (path === '/healthz') continue;
        const served = routers.some((router) => router.match(sampleUrl(path), method.toUpperCase()).route);
        expect(served, `${method.toUpperCase()} ${path} is documented but no router serves it`).to.equal(true);
      }
      for (const key of registered) {
        const [method = '', koaPath = ''] = key.split(' ');
        for (const path of openApiPaths(koaPath)) expect(doc.paths[path]?.[method.toLowerCase()], `${key} is not in the document`).to.not.equal(undefined);
      }
      expect((await svc.client().get('/healthz')).status).to.equal(200);
      expect(doc.paths['/healthz']?.get).to.not.equal(undefined);
    });
  });

  describe('docs/api.md', () => {
    it('given the routers the service mounts, when docs/api.md is read, then every route they register has its section (npm run docs:api)', () => {
      const markdown = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');
      const sections = new Set([...markdown.matchAll(/^### (\S+ \S+)$/gm)].map((match) => match[1]));
      const { keys: registered } = registeredRoutes(svc.service.app);
      const missing = [...registered].flatMap((key) => {
        const [method = '', koaPath = ''] = key.split(' ');
        return openApiPaths(koaPath)
          .map((path) => `${method} ${path}`)
          .filter((section) => !sections.has(section));
      });
      expect(missing, 'served without a section in docs/api.md').to.deep.equal([]);
      expect(sections.has('GET /healthz')).to.equal(true);
    });
  });

  describe('structure', () => {
    it('given the document, when read, then it is OpenAPI 3.1 with the package version, relative servers and unique operation ids', () => {
      expect(doc.openapi).to.equal('3.1.0');
      expect((doc.info as Json).version).to.equal(createRequire(import.meta.url)('../../package.json').version);
      expect(doc.servers).to.deep.equal([{ url: '/', description: 'This service' }]);
      const ids = operations(doc).map(({ op }) => op.operationId);
      expect(new Set(ids).size).to.equal(ids.length);
      expect(Object.keys((doc.components as Json).securitySchemes as Json)).to.have.members(['bearerAuth', 'frontendToken', 'sessionCookie']);
    });

    it('given every $ref in the document, when resolved from its root, then it names something', () => {
      const refs = new Set<string>();
      walk(doc, (value) => {
        if (value !== null && typeof value === 'object' && typeof (value as Json).$ref === 'string') refs.add((value as Json).$ref as string);
      });
      expect(refs.size).to.be.greaterThan(10);
      for (const ref of refs) {
        expect(ref, `${ref} is not local`).to.match(/^#\//);
        expect(resolvePointer(doc, ref), `${ref} resolves to nothing`).to.not.equal(undefined);
      }
    });

    it('given every operation, when its parameters are read, then the template parameters and the path parameters are the same names', () => {
      for (const { path, method, op } of operations(doc)) {
        const parameters = ((op.parameters ?? []) as Json[]).filter((parameter) => parameter.in === 'path');
        expect(parameters.map((parameter) => parameter.name).sort(), `${method} ${path}`).to.deep.equal(templateParams(path).sort());
        expect(parameters.every((parameter) => parameter.required === true)).to.equal(true);
      }
    });

    it('given every schema of the document, when compiled by a strict JSON Schema 2020-12 validator, then it compiles', () => {
      const compile = schemaValidators(doc);
      let count = 0;
      for (const name of Object.keys(doc.components.schemas)) {
        compile({ $ref: `#/components/schemas/${name}` });
        count += 1;
      }
      for (const { op } of operations(doc)) {
        walk(op, (value) => {
          if (value !== null && typeof value === 'object' && 'schema' in value) {
            compile((value as Json).schema);
            count += 1;
          }
        });
      }
      expect(count).to.be.greaterThan(200);
    });
  });

  describe('answers match the documented schemas', () => {
    let compile: ReturnType<typeof schemaValidators>;
    before(() => {
      compile = schemaValidators(doc);
    });
    const check = async (method: string, url: string, docPath: string, status: number, options: { json?: unknown; token?: string | null } = {}) => {
      const reply = await svc.client().request(method, url, { ...(options.json === undefined ? {} : { json: options.json }), ...(options.token === null ? {} : { token: options.token ?? token }) });
      expect(reply.status, `${method} ${url}: ${reply.text.slice(0, 300)}`).to.equal(status);
      const response = (doc.paths[docPath]?.[method.toLowerCase()]?.responses as Record<string, Json> | undefined)?.[String(status)];
      expect(response, `${method} ${docPath} documents no ${status}`).to.not.equal(undefined);
      const content = response?.content as Record<string, Json> | undefined;
      if (content === undefined) {
        expect(reply.text, `${method} ${url} ${status} is documented without a body`).to.equal('');
        return {};
      }
      const validate = compile(content['application/json']?.schema);
      expect(validate(reply.json), `${method} ${url} ${status}: ${JSON.stringify(validate.errors)} in ${reply.text.slice(0, 300)}`).to.equal(true);
      return reply.json as Json;
    };

    it('given a signed-in administrator, when the main reads and writes are made, then each 2xx body matches its documented schema', async () => {
      await check('GET', '/healthz', '/healthz', 200, { token: null });
      await check('GET', '/api/v1/user/me', '/api/v1/user/me', 200);
      await check('GET', '/api/v1/user/marketplace_access_token/get', '/api/v1/user/marketplace_access_token/get', 200);
      const tree = await check('POST', '/api/v1/catalog/bootstrap', '/api/v1/catalog/bootstrap', 200, { json: { account_name: 'docs-account' } });
      const project = String(tree.project_laui);
      const workflow = String((tree.folders as Json).workflow);
      await check('POST', '/api/v1/catalog/create', '/api/v1/catalog/create', 200, { json: { item_type: 'folder.workflow', name: 'flow', parent_laui: workflow } });
      await check('GET', `/api/v1/catalog/get?item_laui=${project}`, '/api/v1/catalog/get', 200);
      await check('GET', `/api/v1/catalog/get?item_laui=${project}&depth=2`, '/api/v1/catalog/get', 200);
      await check('GET', '/api/v1/catalog/get?is_root=true', '/api/v1/catalog/get', 200);
      await check('POST', '/api/v1/catalog/search', '/api/v1/catalog/search', 200, { json: { item_filter: { item_type: 'folder.project' } } });
      await check('GET', `/api/v1/catalog/get/item_revisions?item_laui=${project}`, '/api/v1/catalog/get/item_revisions', 200);
      await check('GET', `/api/v1/catalog/get/item_revisions?item_laui=${project}&version=1`, '/api/v1/catalog/get/item_revisions', 200);
      await check('GET', `/api/v1/catalog/get/item_history?item_laui=${project}`, '/api/v1/catalog/get/item_history', 200);
      await check('GET', '/api/v1/catalog/item-types/supported-types', '/api/v1/catalog/item-types/supported-types', 200);
      await check('GET', `/api/v1/cron/status/${project}`, '/api/v1/cron/status/{project_laui}', 200);
      await check('GET', `/api/v1/catalog/get/tasks_ready_to_run/${project}`, '/api/v1/catalog/get/tasks_ready_to_run/{project_laui}', 200);
      await check('POST', '/api/v1/group/create', '/api/v1/group/create', 200, { json: { name: 'docs-group' } });
      const groups = await check('GET', '/api/v1/group/get?relation=all', '/api/v1/group/get', 200);
      await check('GET', `/api/v1/group/get/${String((groups as unknown as Json[])[0]?.laui)}`, '/api/v1/group/get/{group_laui}', 200);
      await check('GET', '/api/v1/events?limit=5', '/api/v1/events', 200);
      await check('GET', '/api/v1/logs/session/no-such-session/content', '/api/v1/logs/session/{session_id}/content', 200, { token: null });
      await check('POST', '/api/v1/logs/query', '/api/v1/logs/query', 200, { json: { category: 'API', sql: 'SELECT count(*) AS n FROM logs' }, token: null });
      await check('POST', '/api/v1/logs/query', '/api/v1/logs/query', 200, { json: {}, token: null });
    });

    it('given bad requests, when answered, then each error body matches its documented schema', async () => {
      await check('GET', '/api/v1/user/me', '/api/v1/user/me', 401, { token: null });
      await check('GET', '/api/v1/group/get', '/api/v1/group/get', 422);
      await check('POST', '/api/v1/task/update/not-a-laui', '/api/v1/task/update/{task_laui}', 422, { json: { state: 'sleeping' } });
      await check('POST', '/api/v1/catalog/create/link', '/api/v1/catalog/create/link', 404, { json: { parent_laui: SAMPLE_LAUI, child_laui: SAMPLE_LAUI } });
      await check('GET', '/api/v1/catalog/get', '/api/v1/catalog/get', 400);
      await check('POST', '/api/v1/catalog/create', '/api/v1/catalog/create', 422, { json: { item_type: 'task', name: 'x' } });
      await check('POST', '/api/v1/cron/manage', '/api/v1/cron/manage', 400, { json: { project_laui: SAMPLE_LAUI, action: 'PAUSE' } });
      await check('GET', `/api/v1/group/get/${SAMPLE_LAUI}`, '/api/v1/group/get/{group_laui}', 404);
    });
  });

  it('given each documented operation, when called without any credential, then bearer routes answer 401 and public ones do not', async () => {
    for (const { path, method, op } of operations(doc)) {
      const security = op.security as Json[];
      const open = security.length === 0 || security.some((requirement) => Object.keys(requirement).length === 0);
      const body = method === 'get' ? {} : { json: {} };
      const reply = await svc.client().request(method.toUpperCase(), sampleUrl(path), body);
      if (open) expect(reply.status, `${method} ${path} is documented public`).to.not.equal(401);
      else expect(reply.status, `${method} ${path} is documented as needing a token: ${reply.text.slice(0, 200)}`).to.equal(401);
    }
  });

  describe('docs page', () => {
    it('given the docs page, when fetched, then it is served with a strict CSP and no inline script', async () => {
      const reply = await svc.client().get('/api/v1/docs');
      expect(reply.status).to.equal(200);
      expect(reply.headers.get('content-type')).to.match(/^text\/html/);
      const csp = reply.headers.get('content-security-policy') ?? '';
      expect(csp).to.equal(DOCS_CSP);
      expect(csp).to.include("script-src 'self'").and.include("default-src 'none'").and.include("connect-src 'self'");
      expect(/script-src[^;]*(unsafe-inline|unsafe-eval|https?:)/.test(csp)).to.equal(false);
      expect(reply.headers.get('x-content-type-options')).to.equal('nosniff');
      const scripts = [...reply.text.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)];
      expect(scripts.length).to.equal(3);
      for (const [, attributes = '', content = ''] of scripts) {
        expect(attributes).to.match(/\ssrc="\/api\/v1\/docs\//);
        expect(content.trim()).to.equal('');
      }
      expect(reply.text).to.not.match(/\son[a-z]+=/i);
      expect(reply.text).to.not.match(/https?:\/\//);
      expect(reply.text).to.include('data-url="/api/v1/openapi.json"');
    });

    it("given the page's assets, when fetched from the service, then each is the viewer's file from node_modules, cached for good under its version", async () => {
      const page = (await svc.client().get('/api/v1/docs')).text;
      const urls = [...page.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1] ?? '');
      expect(urls).to.have.length(7);
      const viewerDir = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
      const types: Record<string, RegExp> = { css: /^text\/css/, js: /^text\/javascript/, png: /^image\/png/ };
      for (const url of urls) {
        expect(url).to.match(/^\/api\/v1\/docs\/[\w.-]+\?v=[\w-]+$/);
        const response = await recordedFetch(new URL(url, svc.service.url));
        const bytes = Buffer.from(await response.arrayBuffer());
        expect(response.status, url).to.equal(200);
        const name = new URL(url, 'http://x').pathname.split('/').at(-1) ?? '';
        expect(response.headers.get('content-type'), url).to.match(types[name.split('.').at(-1) ?? ''] ?? /^$/);
        expect(response.headers.get('cache-control')).to.equal('public, max-age=31536000, immutable');
        const file = name === 'init.js' ? join(import.meta.dirname, 'apiReference', name) : join(viewerDir, name);
        expect(existsSync(file), file).to.equal(true);
        expect(bytes.length, url).to.equal(statSync(file).size);
      }
    });

    it('given validators and encodings, when assets and the document are asked again, then 304, gzip and no-cache answer as they should', async () => {
      const bundle = await plainGet('/api/v1/docs/swagger-ui-bundle.js', { 'accept-encoding': 'gzip' });
      expect(bundle.status).to.equal(200);
      expect(bundle.headers['content-encoding']).to.equal('gzip');
      expect(gunzipSync(bundle.body).length).to.equal(statSync(join(dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json')), 'swagger-ui-bundle.js')).size);
      expect(bundle.headers['cache-control']).to.equal('no-cache');
      const etag = String(bundle.headers.etag);
      expect(etag).to.match(/^W\/"/);
      const again = await plainGet('/api/v1/docs/swagger-ui-bundle.js', { 'if-none-match': etag });
      expect(again.status).to.equal(304);
      expect(again.body.length).to.equal(0);
      const document = await plainGet('/api/v1/openapi.json');
      expect(document.headers['cache-control']).to.equal('no-cache');
      expect((await plainGet('/api/v1/openapi.json', { 'if-none-match': String(document.headers.etag) })).status).to.equal(304);
      expect((await plainGet('/api/v1/openapi.json', { 'if-none-match': 'W/"other"' })).status).to.equal(200);
    });

    it('given names that are not assets, when asked for, then 404 and nothing of the disk is served', async () => {
      for (const path of ['/api/v1/docs/package.json', '/api/v1/docs/..%2F..%2Fpackage.json', '/api/v1/docs/swagger-ui-bundle.js.map', '/api/v1/docs/index.html', '/api/v1/docs/__proto__']) {
        const reply = await svc.client().get(path);
        expect(reply.status, path).to.equal(404);
        expect((reply.json as Json).detail, path).to.be.a('string');
        expect(reply.text).to.not.include('"name"');
      }
    });

    it('given a browser, when it opens the docs page, then the viewer shows every operation with no policy violation and no other origin', async function () {
      const executablePath = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'].find((path) => path !== undefined && existsSync(path));
      if (executablePath === undefined) {
        console.log('      (skipped: no Chromium here; set CHROMIUM_PATH)');
        this.skip();
      }
      const browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
      try {
        const page = await browser.newPage();
        const problems: string[] = [];
        const origins = new Set<string>();
        page.on('console', (message) => {
          if (message.type() === 'error') problems.push(message.text());
        });
        page.on('pageerror', (error) => problems.push(error.message));
        page.on('request', (request) => {
          if (!request.url().startsWith('data:')) origins.add(new URL(request.url()).origin);
        });
        await page.addInitScript(() => {
          document.addEventListener('securitypolicyviolation', (event) => console.error(`CSP violation: ${event.violatedDirective} ${event.blockedURI}`));
        });
        await page.goto(new URL('/api/v1/docs', svc.service.url).toString());
        await page.waitForSelector('.opblock', { timeout: 30_000 });
        expect(await page.locator('.opblock').count()).to.equal(operations(doc).length);
        await page.locator('.opblock-summary').first().click();
        await page.waitForSelector('.opblock-body', { timeout: 10_000 });
        expect(problems).to.deep.equal([]);
        expect([...origins]).to.deep.equal([new URL(svc.service.url).origin]);
      } finally {
        await browser.close();
      }
    });
  });
});
