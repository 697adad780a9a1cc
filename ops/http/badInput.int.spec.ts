import { expect } from 'chai';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { metadataFor } from '../../shared/events.ts';
import { newLaui } from '../../shared/ids.ts';
import { JSON_MAX_DEPTH, TOO_DEEP } from '../../shared/validation/jsonDepth.ts';
import { itemCreationEvents } from '../../command-side/catalog/itemCreatedEvent.ts';
import { itemStream } from '../../command-side/catalog/item.ts';
import { startTestService, type TestService } from '../../test/support/testService.ts';
import { catalogClient, type CatalogClient } from '../../test/support/catalogFixture.ts';
import { taskBed, type TaskBed } from '../../test/support/taskBed.ts';
import { rawRequest } from '../../test/support/rawRequest.ts';

type Entry = { type: string; loc: Array<string | number>; msg: string; input?: unknown; ctx?: Record<string, unknown> };
const entries = (json: unknown): Entry[] => (json as { detail: Entry[] }).detail;

const nestedArrays = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
/** A JSON text exactly `depth` containers deep: `{"grant_type": ..., "credentials": {"a": {"a": ... }}}`. */
const tokenBodyOfDepth = (depth: number) => `{"grant_type":"nope","credentials":${'{"a":'.repeat(depth - 2)}{}${'}'.repeat(depth - 2)}}`;

describe('Bad input never gets a 500', () => {
  let svc: TestService;
  let token: string;
  let admin: CatalogClient;
  let bed: TaskBed;
  let operator: string;

  before(async () => {
    svc = await startTestService();
    token = (await svc.login()).token;
    admin = catalogClient(svc, token);
    bed = await taskBed(admin, 'bad-input', { name: 'target', content: { host: 'db.example' } });
    operator = await admin.createOk({ item_type: 'operator', name: 'x.operator', parent_laui: bed.tree.folders.operator, codeblock: { language: 'javascript', code: 'return {}' } });
  });
  after(async () => svc?.stop());

  const postJson = (path: string, body: string, extra: Record<string, string> = {}, withToken = true) =>
    svc.client().post(path, { body, headers: { 'content-type': 'application/json', ...extra }, ...(withToken ? { token } : {}) });

  describe('nesting depth', () => {
    it(`given JSON nested 10,000 deep, when posted to /login, /token or a private route, then 422 json_invalid naming the bound (${JSON_MAX_DEPTH})`, async () => {
      for (const [path, body] of [
        ['/api/v1/login', nestedArrays(10_000)],
        ['/api/v1/token', nestedArrays(10_000)],
        ['/api/v1/token', `{"grant_type":"refresh_token","credentials":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}}`],
        ['/api/v1/catalog/create', `{"item_type":"payload","name":"deep","parent_laui":"${bed.tree.folders.payload}","content":{"x":${nestedArrays(3000)}}}`],
        ['/api/v1/catalog/search', nestedArrays(300_000)],
      ] as const) {
        const reply = await postJson(path, body);
        expect(reply.status, `${path}: ${reply.text.slice(0, 200)}`).to.equal(422);
        const [entry] = entries(reply.json);
        expect(entry).to.deep.include({ type: 'json_invalid', msg: `JSON nested deeper than ${JSON_MAX_DEPTH} levels` });
        expect(entry?.ctx).to.deep.include({ max_depth: JSON_MAX_DEPTH });
      }
    });

    it(`given JSON exactly ${JSON_MAX_DEPTH} deep, when posted, then it is parsed (the route's own answer); one level more is refused`, async () => {
      const atBound = await postJson('/api/v1/token', tokenBodyOfDepth(JSON_MAX_DEPTH));
      expect(atBound.status).to.equal(422);
      expect(entries(atBound.json)[0]?.type).to.equal('enum');
      const over = await postJson('/api/v1/token', tokenBodyOfDepth(JSON_MAX_DEPTH + 1));
      expect(over.status).to.equal(422);
      expect(entries(over.json)[0]?.type).to.equal('json_invalid');
    });

    it('given a form body or a query string nested thousands deep, when sent, then a 4xx', async () => {
      const form = await svc.client().post('/api/v1/login', {
        body: `username${'[a]'.repeat(5000)}=x&password=y`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expect(form.status, form.text).to.be.within(400, 499);
      const query = await svc.client().get(`/api/v1/catalog/get?item_laui${'[a]'.repeat(2000)}=1`, { token });
      expect(query.status, query.text).to.be.within(400, 499);
    });
  });

  describe('Content-Encoding', () => {
    it('given Content-Encoding gzip (or deflate, br) on a plain body, when posted, then 400 with a detail, never 500', async () => {
      for (const encoding of ['gzip', 'deflate', 'br']) {
        for (const withToken of [false, true]) {
          const reply = await postJson('/api/v1/catalog/search', '{"item_filter":{}}', { 'content-encoding': encoding }, withToken);
          expect(reply.status, `${encoding}: ${reply.text}`).to.equal(400);
          expect(reply.json).to.deep.equal({ detail: `Request body is not valid ${encoding} data (Content-Encoding)` });
        }
      }
      const login = await svc.client().post('/api/v1/login', { body: 'username=a&password=b', headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-encoding': 'gzip' } });
      expect(login.status).to.equal(400);
    });

    it('given a really gzipped (deflated, brotli) JSON body, when posted, then it is served as usual', async () => {
      const body = Buffer.from(JSON.stringify({ item_filter: { item_type: 'operator' } }));
      for (const [encoding, encoded] of [
        ['gzip', gzipSync(body)],
        ['deflate', deflateSync(body)],
        ['br', brotliCompressSync(body)],
      ] as const) {
        const reply = await rawRequest(svc.service.url, {
          method: 'POST',
          path: '/api/v1/catalog/search',
          headers: [['Content-Type', 'application/json'], ['Content-Encoding', encoding], ['Authorization', `Bearer ${token}`]],
          body: encoded,
        });
        expect(reply.status, `${encoding}: ${reply.body}`).to.equal(200);
        expect((JSON.parse(reply.body) as { items: Array<{ laui: string }> }).items.map((item) => item.laui)).to.include(operator);
      }
    });

    it('given an encoding the parser does not know, when posted, then 415 with a detail', async () => {
      const reply = await postJson('/api/v1/token', '{}', { 'content-encoding': 'x-compress' });
      expect(reply.status).to.equal(415);
      expect(reply.json).to.deep.equal({ detail: 'Unsupported Content-Encoding: x-compress' });
    });
  });

  describe('wrong JSON types and hostile keys', () => {
    it('given "frequency": {"toString": "x"} on /task/run, then 422 in the list form at body.frequency', async () => {
      const reply = await postJson('/api/v1/task/run', JSON.stringify({ item_type: 'task', ...bed.taskBody('tostring', operator), frequency: { toString: 'x' } }));
      expect(reply.status, reply.text).to.equal(422);
      expect(entries(reply.json)).to.have.length(1);
      expect(entries(reply.json)[0]).to.deep.include({ type: 'string_type', loc: ['body', 'frequency'], input: { toString: 'x' } });
    });

    it('given a non-string frequency with a valueOf, when posted to /task/run, then 422 list, and a bad cron string still gets its string detail', async () => {
      const reply = await postJson('/api/v1/task/run', JSON.stringify({ item_type: 'task', ...bed.taskBody('valueof', operator), frequency: { valueOf: 1 } }));
      expect(reply.status).to.equal(422);
      expect(entries(reply.json)[0]?.loc).to.deep.equal(['body', 'frequency']);
      const cron = await postJson('/api/v1/task/run', JSON.stringify({ item_type: 'task', ...bed.taskBody('badcron', operator), frequency: 'not a cron' }));
      expect(cron.status).to.equal(422);
      expect(cron.json).to.deep.equal({ detail: 'invalid cron expression: not a cron' });
    });

    it('given credentials.provider {"toString": "x"} on /token, then 422 in the list form', async () => {
      const reply = await postJson('/api/v1/token', JSON.stringify({ grant_type: 'authorization_code', credentials: { code: 'x', provider: { toString: 'x' } } }), {}, false);
      expect(reply.status, reply.text).to.equal(422);
      expect(entries(reply.json)[0]).to.deep.include({ type: 'string_type', loc: ['body', 'credentials', 'provider'] });
    });

    it('given a primary-key field {"toString": "x"} in a get_by_pk search, then 422 in the list form at that field', async () => {
      const filter = { item_type: 'task', get_by_pk: true, name: 'n', project_laui: bed.tree.project_laui, account_laui: bed.tree.account_laui, partition: { toString: 'x' } };
      const reply = await postJson('/api/v1/catalog/search', JSON.stringify({ item_filter: filter }));
      expect(reply.status, reply.text).to.equal(422);
      expect(entries(reply.json)[0]).to.deep.include({ type: 'value_error', loc: ['body', 'item_filter', 'partition'] });
    });

    it('given codeblock.language {"toString": "x"} on /action/run, then 422 naming codeblock.language (the endpoint\'s summary form)', async () => {
      const body = { item_type: 'action', name: 'lang.action', parent_laui: bed.tree.folders.action, connection_laui: bed.connection, codeblock: { language: { toString: 'x' }, code: 'return 1' } };
      const reply = await postJson('/api/v1/action/run', JSON.stringify(body));
      expect(reply.status, reply.text).to.equal(422);
      expect((reply.json as { detail: { summary: string } }).detail.summary).to.include('codeblock.language: Input should be a valid string');
    });

    it('given a task whose stored actions_status holds {"toString": "x"} values, when it is diagnosed, then 200', async () => {
      const task = await admin.createOk({ item_type: 'task', ...bed.taskBody('diagnosed', operator) });
      const hostile = { toString: 'x' };
      const update = await postJson(`/api/v1/task/update/${task}`, JSON.stringify({ actions_status: { pre_actions: [{ state: hostile, status: hostile, name: hostile, laui: hostile }] } }));
      expect(update.status, update.text).to.equal(200);
      const diagnosis = await svc.client().get(`/api/v1/task/diagnose/${task}`, { token });
      expect(diagnosis.status, diagnosis.text).to.equal(200);
    });

    it('given a __proto__ or constructor key, when posted, then a 4xx and no prototype is touched', async () => {
      const proto = await postJson('/api/v1/user/create', '{"__proto__":{"isAdmin":true},"username":"p","email":"p@example.com","password":"pw-123456"}');
      expect(proto.status).to.equal(400);
      expect(proto.json).to.deep.equal({ detail: 'Object contains forbidden prototype property' });
      const constructor = await postJson('/api/v1/catalog/search', '{"item_filter":{"constructor":{"prototype":{"isAdmin":true}}}}');
      expect(constructor.status).to.equal(422);
      expect(({} as Record<string, unknown>).isAdmin).to.equal(undefined);
    });
  });

  describe('methods', () => {
    it('given a method the router does not know (PROPFIND), when sent to a route, then 405; to an unknown path, 404 (never 501)', async () => {
      for (const [path, status, detail] of [
        ['/api/v1/login', 405, 'Method Not Allowed'],
        ['/api/v1/catalog/search', 405, 'Method Not Allowed'],
        ['/api/v1/nowhere', 404, 'Not Found'],
      ] as const) {
        const reply = await rawRequest(svc.service.url, { method: 'PROPFIND', path, headers: [['Authorization', `Bearer ${token}`]] });
        expect(reply.status, path).to.equal(status);
        expect(JSON.parse(reply.body)).to.deep.equal({ detail });
      }
    });
  });

  describe('error bodies are bounded', () => {
    it('given a 200,000-character value of the wrong type, when rejected, then the 422 echoes a summary of it', async () => {
      const reply = await postJson('/api/v1/user/create', JSON.stringify({ username: ['x'.repeat(200_000)], email: 'e@example.com', password: 'pw-123456' }));
      expect(reply.status).to.equal(422);
      expect(reply.text.length).to.be.below(2000);
      const [entry] = entries(reply.json);
      expect(entry?.loc).to.deep.equal(['body', 'username']);
      expect((entry?.input as string[])[0]).to.match(/^x{200}… \(200000 characters\)$/);
    });

    it('given a wide and deep object of the wrong type, when rejected, then the echoed input is cut in width and depth', async () => {
      const wide = Object.fromEntries(Array.from({ length: 5000 }, (_, index) => [`k${index}`, { a: { b: { c: { d: 1 } } } }]));
      const reply = await postJson('/api/v1/user/create', JSON.stringify({ username: wide, email: 'e@example.com', password: 'pw-123456' }));
      expect(reply.status).to.equal(422);
      expect(reply.text.length).to.be.below(2000);
      const input = entries(reply.json)[0]?.input as Record<string, unknown>;
      expect(Object.keys(input)).to.have.length(11);
      expect(input['…']).to.equal('4990 more keys');
      expect(input.k0).to.deep.equal({ a: { b: '{…}' } });
    });
  });

  describe('nothing stored makes a later read fail', () => {
    const DEEP = 3000;
    let laui: string;

    before(async () => {
      // An item as a log written before the depth bound holds it: appended straight to the store.
      const me = (await svc.client().get('/api/v1/user/me', { token })).json as { laui: string };
      laui = newLaui(new Date());
      const events = itemCreationEvents({
        laui,
        itemType: 'payload',
        name: 'deep-payload',
        parent: { laui: bed.tree.folders.payload, type: 'folder.payload' },
        fields: { content: { x: JSON.parse(nestedArrays(DEEP)) as unknown } },
        access: { owners: { [me.laui]: 'true' }, editors: {}, viewers: {} },
        metadata: metadataFor(me.laui, new Date(), 'old-log'),
        actor: { isAdmin: false },
      });
      const { position } = await svc.service.eventStore.append(itemStream(laui), events, 'no_stream');
      expect(await svc.service.readModels.waitFor(position, 20_000)).to.equal(true);
    });

    const readsSucceed = async (service: TestService, bearer: string) => {
      const api = catalogClient(service, bearer);
      const listed = await api.get({ item_laui: bed.tree.folders.payload, parent_or_child: 'child' });
      expect(listed.status, listed.text.slice(0, 300)).to.equal(200);
      expect(listed.text).to.include(laui);
      const searched = await api.search({ item_filter: { item_type: 'payload' } });
      expect(searched.status, searched.text.slice(0, 300)).to.equal(200);
      const item = (searched.json as { items: Array<{ laui: string; content: unknown }> }).items.find((candidate) => candidate.laui === laui);
      // Clamped: the value keeps its first levels, and the marker stands where the rest was.
      expect(JSON.stringify(item?.content)).to.include(TOO_DEEP);
      const one = await api.get({ item_laui: laui });
      expect(one.status).to.equal(200);
      for (const path of [`/get/item_history?item_laui=${laui}`, `/get/item_revisions?item_laui=${laui}&version=1`]) {
        const reply = await api.getPath(path);
        expect(reply.status, `${path}: ${reply.text.slice(0, 300)}`).to.equal(200);
      }
    };

    it(`given an item stored with a payload nested ${DEEP} deep, when its folder is listed, its type searched, it or its history read, then 200`, async () => {
      await readsSucceed(svc, token);
    });

    it('given that log, when the service restarts and rebuilds its read models from it, then the reads still succeed', async () => {
      await svc.stop({ keepData: true });
      svc = await startTestService({}, {}, svc.dataDir);
      token = (await svc.login()).token;
      await readsSucceed(svc, token);
    });
  });
});
