import { expect } from 'chai';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { startTestService, type TestService } from '../support/testService.ts';
import { catalogClient, createUser, type CatalogClient } from '../support/catalogFixture.ts';
import type { Reply } from '../support/HttpClient.ts';

/**
 * POST /api/v1/marketplace/import (spec 4.8) between real service instances: `market` is the
 * marketplace (an instance of this service, no MARKETPLACE_URL of its own), `home` imports from it;
 * `stubbed` imports from a tiny local HTTP server that answers whatever a test sets (garbage,
 * errors, silence, redirects, crafted items), `down` from a closed port.
 */

type Handler = (request: IncomingMessage, response: ServerResponse) => void;

const json = (status: number, body: unknown): Handler => (_request, response) => {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
};

const listen = async (handler: (request: IncomingMessage, response: ServerResponse) => void): Promise<{ server: Server; url: string }> => {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
};

const closeServer = (server: Server) =>
  new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });

/** Every file under a directory, recursively (the logs root's category folders and session files). */
const filesUnder = (dir: string): string[] =>
  existsSync(dir) ? readdirSync(dir).flatMap((name) => (statSync(join(dir, name)).isDirectory() ? filesUnder(join(dir, name)) : [join(dir, name)])) : [];

const IMPORT = '/api/v1/marketplace/import';
const UNKNOWN = '65a0c0ffee0000000000beef';

describe('marketplace import (spec 4.8, two real service instances)', function () {
  this.timeout(120_000);
  const light = { WORKER_POOL_SIZE: '0' };
  let market: TestService;
  let home: TestService;
  let stubbed: TestService;
  let down: TestService;
  let stub: { server: Server; url: string };
  let stubHandler: Handler = json(200, {});
  const stubSeen: Array<{ url: string; authorization: string | undefined }> = [];
  let downUrl = '';

  let marketToken = '';
  let marketApi: CatalogClient;
  let marketTree: Awaited<ReturnType<CatalogClient['bootstrap']>>;
  let homeAdmin: { laui: string; token: string };
  let homeApi: CatalogClient;
  let homeTree: Awaited<ReturnType<CatalogClient['bootstrap']>>;
  let stubbedAdmin = '';
  let downAdmin = '';
  const STUB_TOKEN = 'stub-marketplace-token-5f3a9c';
  const BOGUS_TOKEN = 'bogus-marketplace-token-77e1';

  /** Every answer of the import route, to check that no token ever shows in one. */
  const replies: Reply[] = [];
  const importInto = async (svc: TestService, token: string | undefined, body: unknown): Promise<Reply> => {
    const reply = await svc.client().post(IMPORT, token === undefined ? { json: body } : { json: body, token });
    replies.push(reply);
    return reply;
  };
  const storeToken = async (svc: TestService, token: string, marketplaceToken: string) => {
    const stored = await svc.client().post('/api/v1/user/marketplace_access_token/update', { json: { marketplace_access_token: marketplaceToken }, token });
    expect(stored.status, stored.text).to.equal(200);
  };

  const marketItems: Record<string, string> = {};

  before(async () => {
    market = await startTestService(light);
    marketToken = (await market.login()).token;
    marketApi = catalogClient(market, marketToken);
    marketTree = await marketApi.bootstrap('market-account', 'catalog');
    const { folders, project_laui, account_laui } = marketTree;
    marketItems.operator = await marketApi.createOk({
      item_type: 'operator',
      name: 'extract.operator',
      description: 'Extracts rows',
      parent_laui: folders.operator,
      codeblock: { language: 'python', code: 'def run(connection, payload):\n    return {"ok": True}\n' },
      bashblock: { language: 'bash', code: 'pip install requests' },
      payload: { table: 'events' },
    });
    marketItems['operator.python'] = await marketApi.createOk({
      item_type: 'operator.python',
      name: 'load.operator',
      parent_laui: folders.operator,
      codeblock: { language: 'python', code: 'def run(connection, payload):\n    return {}\n' },
    });
    marketItems.action = await marketApi.createOk({
      item_type: 'action',
      name: 'notify.action',
      parent_laui: folders.action,
      project_laui,
      account_laui,
      codeblock: { language: 'javascript', code: 'return true;' },
      bashblock: { language: 'bash', code: '' },
      action_variables: { channel: 'ops' },
    });
    marketItems.payload = await marketApi.createOk({ item_type: 'payload', name: 'daily-payload', parent_laui: folders.payload, content: { window: '{{ds}}', rows: 100 } });
    marketItems.config = await marketApi.createOk({
      item_type: 'config',
      name: 'retry-config',
      parent_laui: folders.config,
      config_type: 'task',
      content: { parameters: { region: 'eu' }, total_retries: 2 },
    });
    marketItems.connection = await marketApi.createOk({
      item_type: 'connection',
      name: 'generic-api',
      parent_laui: folders.connection,
      content: { base_url: 'https://api.example' },
      max_parallelism: 2,
    });
    marketItems['connection.postgresql'] = await marketApi.createOk({
      item_type: 'connection.postgresql',
      name: 'warehouse',
      parent_laui: folders.connection,
      content: { host: 'db.example', port: 5432, database: 'dw', user: 'etl', password: 'market-db-password-1' },
      max_parallelism: 3,
      sort_dict: { priority: 'descending' },
    });
    marketItems.workflow = await marketApi.createOk({ item_type: 'folder.workflow', name: 'nightly', parent_laui: project_laui });
    marketItems.deleted = await marketApi.createOk({ item_type: 'payload', name: 'withdrawn', parent_laui: folders.payload, content: {} });
    expect((await marketApi.post('/delete', { item_laui: marketItems.deleted })).status).to.equal(200);

    home = await startTestService({ ...light, MARKETPLACE_URL: `${market.service.url}/` });
    const homeLogin = await home.login();
    const me = (await home.client().get('/api/v1/user/me', { token: homeLogin.token })).json as { laui: string };
    homeAdmin = { laui: me.laui, token: homeLogin.token };
    homeApi = catalogClient(home, homeAdmin.token);
    homeTree = await homeApi.bootstrap('home-account', 'imports');
    await storeToken(home, homeAdmin.token, marketToken);

    stub = await listen((request, response) => {
      stubSeen.push({ url: request.url ?? '', authorization: request.headers.authorization });
      stubHandler(request, response);
    });
    stubbed = await startTestService({ ...light, MARKETPLACE_URL: stub.url, MARKETPLACE_TIMEOUT_SECONDS: '1', MARKETPLACE_MAX_BYTES: '65536' });
    stubbedAdmin = (await stubbed.login()).token;
    await storeToken(stubbed, stubbedAdmin, STUB_TOKEN);

    const closed = await listen(() => undefined);
    downUrl = closed.url;
    await closeServer(closed.server);
    down = await startTestService({ ...light, MARKETPLACE_URL: downUrl });
    downAdmin = (await down.login()).token;
    await storeToken(down, downAdmin, STUB_TOKEN);
  });

  after(async () => {
    await Promise.all([market?.stop(), home?.stop(), stubbed?.stop(), down?.stop()]);
    if (stub) await closeServer(stub.server);
  });

  const folderOf = (itemType: string): string => {
    const base = itemType.split('.')[0] as 'operator' | 'action' | 'payload' | 'config' | 'connection';
    return homeTree.folders[base];
  };

  describe('importable types', () => {
    for (const type of ['operator', 'operator.python', 'action', 'payload', 'config', 'connection']) {
      it(`given a marketplace item of type ${type}, when imported into its folder, then it is created with the same type, name and content, under the parent, owned by the importer`, async () => {
        const source = (await marketApi.get({ item_laui: marketItems[type] as string })).json as Record<string, unknown>;
        const reply = await importInto(home, homeAdmin.token, { marketplace_item_id: marketItems[type], parent_laui: folderOf(type) });
        expect(reply.status, reply.text).to.equal(200);
        const { item_laui, message } = reply.json as { item_laui: string; message: string };
        expect(message).to.equal('Item imported successfully from Marketplace');
        expect(item_laui).to.match(/^[0-9a-f]{24}$/).and.not.equal(marketItems[type]);

        const imported = (await homeApi.get({ item_laui })).json as Record<string, unknown>;
        expect(imported).to.include({ laui: item_laui, item_type: type, name: source.name, parent_laui: folderOf(type), is_root: false, version: 1, created_by: homeAdmin.laui, deleted_at: null });
        expect(imported.access).to.deep.equal({ owners: { [homeAdmin.laui]: 'true' }, editors: {}, viewers: {} });
        // Every content field of the source, and nothing of the marketplace's own.
        const service = new Set(['laui', 'parent_laui', 'access', 'created_at', 'updated_at', 'deleted_at', 'created_by', 'updated_by', 'version', 'pk', 'is_root', 'project_laui', 'account_laui']);
        for (const [key, value] of Object.entries(source)) if (!service.has(key)) expect(imported[key], key).to.deep.equal(value);
        expect(imported).to.not.have.any.keys('project_laui', 'account_laui', 'imported_from');
        expect(imported.created_at).to.not.equal(source.created_at);
      });
    }

    it("given an imported item, when its history, its revisions and the event log are read, then its ItemCreated names the source and its revision holds only the item's fields", async () => {
      const reply = await importInto(home, homeAdmin.token, { marketplace_item_id: marketItems.payload, parent_laui: homeTree.folders.payload });
      // The payload was imported once already (above) into the same folder: its name is taken there.
      expect(reply.status).to.equal(409);
      expect(reply.json).to.deep.equal({ detail: 'Item already exists with the same unique key' });

      const folder = await homeApi.createOk({ item_type: 'folder.payload', name: 'from-market', parent_laui: homeTree.folders.payload });
      const again = await importInto(home, homeAdmin.token, { marketplace_item_id: marketItems.payload, parent_laui: folder });
      expect(again.status, again.text).to.equal(200);
      const laui = (again.json as { item_laui: string }).item_laui;
      const source = { marketplace_url: market.service.url, item_id: marketItems.payload };

      const history = (await homeApi.getPath(`/get/item_history?item_laui=${laui}`)).json as Array<Record<string, unknown>>;
      expect(history).to.have.length(1);
      expect(history[0]).to.include({ event: 'ItemCreated', user_laui: homeAdmin.laui, version: 1 });
      expect(history[0]?.imported_from).to.deep.equal(source);
      expect(history[0]?.changed_fields).to.have.members(['name', 'content']);

      const events = (await home.client().get(`/api/v1/events?stream=item-${laui}`, { token: homeAdmin.token })).json as { events: Array<{ type: string; version: number; data: Record<string, unknown> }> };
      expect(events.events.map((event) => event.type)).to.deep.equal(['ItemCreated']);
      expect(events.events[0]?.version).to.equal(1);
      expect(events.events[0]?.data.imported_from).to.deep.equal(source);

      const revision = (await homeApi.getPath(`/get/item_revisions?item_laui=${laui}&version=1`)).json as Record<string, unknown>;
      expect(revision).to.include({ item_type: 'payload', name: 'daily-payload', version: 1, item_laui: laui });
      expect(revision.content).to.deep.equal({ window: '{{ds}}', rows: 100 });
      expect(revision).to.not.have.property('imported_from');

      // An item made by catalog create names no source.
      const created = (await homeApi.getPath(`/get/item_history?item_laui=${folder}`)).json as Array<Record<string, unknown>>;
      expect(created[0]).to.not.have.property('imported_from');
      // And the imported item changes as any other does.
      expect((await homeApi.post('/update', { item_laui: laui, content: { rows: 5 } })).json).to.deep.equal({ item_laui: laui, version: 2 });
    });
  });

  describe('connections: masked secrets are left out and named, never stored as values', () => {
    it('given a connection whose password the marketplace serves masked, when imported, then the other values are kept, the password is absent and the message says to set it', async () => {
      const reply = await importInto(home, homeAdmin.token, { marketplace_item_id: marketItems['connection.postgresql'], parent_laui: homeTree.folders.connection });
      expect(reply.status, reply.text).to.equal(200);
      const { item_laui, message } = reply.json as { item_laui: string; message: string };
      expect(message).to.equal('Item imported successfully from Marketplace; masked secret values were not imported, set them on the item: content.password');
      const imported = (await homeApi.get({ item_laui })).json as Record<string, unknown>;
      expect(imported).to.include({ item_type: 'connection.postgresql', name: 'warehouse', max_parallelism: 3 });
      expect(imported.content).to.deep.equal({ host: 'db.example', port: 5432, database: 'dw', user: 'etl' });
      expect(imported.sort_dict).to.deep.equal({ priority: 'descending' });
      // Sealed here like any credential, with no password key at all (not a `********` password).
      const events = (await home.client().get(`/api/v1/events?stream=item-${item_laui}`, { token: homeAdmin.token })).json as { events: Array<{ data: { fields: { content: { keys: string[] } } } }> };
      expect(events.events[0]?.data.fields.content.keys).to.deep.equal(['host', 'port', 'database', 'user']);
      // The owner fills it in: a new revision.
      const updated = await homeApi.post('/update', { item_laui, content: { host: 'db.example', port: 5432, database: 'dw', user: 'etl', password: 'home-db-password' } });
      expect(updated.json).to.deep.equal({ item_laui, version: 2 });
    });

    it('given a marketplace user who may not view the connection (every value masked), when imported, then the content comes empty and every key is named', async () => {
      const stranger = await createUser(market, marketToken, 'market-stranger');
      const bob = await createUser(home, homeAdmin.token, 'conn-importer');
      await storeToken(home, bob.token, stranger.token);
      const mine = await catalogClient(home, bob.token).bootstrap('bob-account', 'p');
      const reply = await importInto(home, bob.token, { marketplace_item_id: marketItems['connection.postgresql'], parent_laui: mine.folders.connection });
      expect(reply.status, reply.text).to.equal(200);
      const { item_laui, message } = reply.json as { item_laui: string; message: string };
      expect(message).to.equal(
        'Item imported successfully from Marketplace; masked secret values were not imported, set them on the item: content.host, content.port, content.database, content.user, content.password',
      );
      expect(((await catalogClient(home, bob.token).get({ item_laui })).json as { content: unknown }).content).to.deep.equal({});
    });
  });

  describe('error rows', () => {
    it('given no Bearer token or an invalid one, when importing, then 401 User not authenticated', async () => {
      const body = { marketplace_item_id: marketItems.payload, parent_laui: homeTree.folders.payload };
      for (const token of [undefined, 'not-a-jwt']) {
        const reply = await importInto(home, token, body);
        expect(reply.status).to.equal(401);
        expect(reply.json).to.deep.equal({ detail: 'User not authenticated' });
      }
    });

    it('given a body without its fields, when importing, then 422 lists them', async () => {
      const reply = await importInto(home, homeAdmin.token, { parent_laui: 'nope' });
      expect(reply.status).to.equal(422);
      const locs = (reply.json as { detail: Array<{ loc: string[] }> }).detail.map((entry) => entry.loc.join('.'));
      expect(locs).to.include('body.marketplace_item_id');
    });

    it('given a user who stored no marketplace token, when importing, then 400 and the marketplace is not asked', async () => {
      const carol = await createUser(stubbed, stubbedAdmin, 'no-token-user');
      const asked = stubSeen.length;
      const reply = await importInto(stubbed, carol.token, { marketplace_item_id: UNKNOWN, parent_laui: UNKNOWN });
      expect(reply.status).to.equal(400);
      expect(reply.json).to.deep.equal({ detail: 'No Marketplace access token stored' });
      expect(stubSeen.length).to.equal(asked);
    });

    it('given a stored token the marketplace refuses (401), when importing, then 401 Invalid Marketplace access token', async () => {
      const dave = await createUser(home, homeAdmin.token, 'bogus-token-user');
      await storeToken(home, dave.token, BOGUS_TOKEN);
      const reply = await importInto(home, dave.token, { marketplace_item_id: marketItems.payload, parent_laui: homeTree.folders.payload });
      expect(reply.status).to.equal(401);
      expect(reply.json).to.deep.equal({ detail: 'Invalid Marketplace access token' });
    });

    it('given a marketplace that answers 403, when importing, then 401 Invalid Marketplace access token too', async () => {
      stubHandler = json(403, { detail: 'Password change required' });
      const reply = await importInto(stubbed, stubbedAdmin, { marketplace_item_id: UNKNOWN, parent_laui: UNKNOWN });
      expect(reply.status).to.equal(401);
      expect(reply.json).to.deep.equal({ detail: 'Invalid Marketplace access token' });
    });

    it('given an id the marketplace does not have, or an item it deleted, when importing, then 404 Item not found in Marketplace', async () => {
      for (const id of [UNKNOWN, marketItems.deleted]) {
        const reply = await importInto(home, homeAdmin.token, { marketplace_item_id: id, parent_laui: homeTree.folders.payload });
        expect(reply.status, String(id)).to.equal(404);
        expect(reply.json).to.deep.equal({ detail: 'Item not found in Marketplace' });
      }
    });

    it('given a type that is not importable (a workflow folder), when importing, then 422 {summary, validation_context} and nothing is created', async () => {
      const reply = await importInto(home, homeAdmin.token, { marketplace_item_id: marketItems.workflow, parent_laui: homeTree.project_laui });
      expect(reply.status).to.equal(422);
      const detail = (reply.json as { detail: { summary: string; validation_context: Record<string, unknown> } }).detail;
      expect(detail.summary).to.equal('Item type folder.workflow cannot be imported from the Marketplace; importable types: operator, action, payload, config, connection (and their subtypes)');
      expect(detail.validation_context).to.deep.include({
        item_type: 'folder.workflow',
        operation: 'import',
        name: 'nightly',
        marketplace_item_id: marketItems.workflow,
        parent_laui: homeTree.project_laui,
        importable_types: ['operator', 'action', 'payload', 'config', 'connection'],
      });
      expect((detail.validation_context.errors as Array<{ loc: string[] }>)[0]?.loc).to.deep.equal(['body', 'item_type']);
      const children = (await homeApi.get({ item_laui: homeTree.project_laui, item_type: 'folder.workflow' })).json as { items: Array<{ name: string }> };
      expect(children.items.map((item) => item.name)).to.deep.equal(['workflow']);
    });

    it('given a parent that does not allow the type (an operator into the payload folder), when importing, then 422 {summary, validation_context} with the allowed types', async () => {
      const reply = await importInto(home, homeAdmin.token, { marketplace_item_id: marketItems.operator, parent_laui: homeTree.folders.payload });
      expect(reply.status).to.equal(422);
      const detail = (reply.json as { detail: { summary: string; validation_context: Record<string, unknown> } }).detail;
      expect(detail.summary).to.equal('Item type operator is not allowed under folder.payload');
      expect(detail.validation_context).to.deep.include({ item_type: 'operator', operation: 'import', name: 'extract.operator', item_type_passed: 'operator', allowed_item_types: ['folder.payload', 'payload'] });
    });

    it('given a parent the caller may not edit, when importing, then 403 Access denied and nothing is created; into a folder of their own it works', async () => {
      const eve = await createUser(home, homeAdmin.token, 'no-edit-user');
      await storeToken(home, eve.token, marketToken);
      const denied = await importInto(home, eve.token, { marketplace_item_id: marketItems.config, parent_laui: homeTree.folders.config });
      expect(denied.status).to.equal(403);
      expect(denied.json).to.deep.equal({ detail: 'Access denied' });
      // A viewer may not add to it either.
      const granted = await homeApi.post('/update', { item_laui: homeTree.folders.config, access_patch: { add: { viewers: { [eve.laui]: 'true' } } } });
      expect(granted.status, granted.text).to.equal(200);
      expect((await importInto(home, eve.token, { marketplace_item_id: marketItems.config, parent_laui: homeTree.folders.config })).status).to.equal(403);
      const children = (await homeApi.get({ item_laui: homeTree.folders.config, item_type: 'config' })).json as { items: Array<{ created_by: string }> };
      expect(children.items.map((item) => item.created_by)).to.deep.equal([homeAdmin.laui]);

      const own = await catalogClient(home, eve.token).bootstrap('eve-account', 'p');
      expect((await importInto(home, eve.token, { marketplace_item_id: marketItems.config, parent_laui: own.folders.config })).status).to.equal(200);
    });

    it('given a parent that does not exist, when importing, then 404 naming it', async () => {
      const reply = await importInto(home, homeAdmin.token, { marketplace_item_id: marketItems.payload, parent_laui: UNKNOWN });
      expect(reply.status).to.equal(404);
      expect(reply.json).to.deep.equal({ detail: `Item not found with laui: ${UNKNOWN}` });
    });

    it('given a marketplace that is down (a closed port), when importing, then 500 Error connecting to Marketplace with the refusal', async () => {
      const reply = await importInto(down, downAdmin, { marketplace_item_id: UNKNOWN, parent_laui: UNKNOWN });
      expect(reply.status).to.equal(500);
      expect((reply.json as { detail: string }).detail).to.match(/^Error connecting to Marketplace: connect ECONNREFUSED 127\.0\.0\.1:\d+$/);
    });

    it('given a service without MARKETPLACE_URL, when importing, then 500 Error connecting to Marketplace saying so', async () => {
      await storeToken(market, marketToken, 'any-token-value');
      const reply = await importInto(market, marketToken, { marketplace_item_id: UNKNOWN, parent_laui: marketTree.folders.payload });
      expect(reply.status).to.equal(500);
      expect(reply.json).to.deep.equal({ detail: 'Error connecting to Marketplace: MARKETPLACE_URL is not set' });
    });

    it('given a marketplace that answers garbage, when importing, then 500 Error fetching item from Marketplace saying what was wrong', async () => {
      const cases: Array<[Handler, string]> = [
        [(_request, response) => response.end('<html>502 Bad Gateway</html>'), 'Error fetching item from Marketplace: HTTP 200: the answer is not JSON'],
        [json(200, ['not', 'an', 'item']), 'Error fetching item from Marketplace: HTTP 200: the answer is not a catalog item (a JSON object)'],
        [json(200, { laui: UNKNOWN, content: {} }), 'Error fetching item from Marketplace: the answer is not a catalog item (it has no item_type and name)'],
        [json(500, { detail: 'Internal server error: database is locked' }), 'Error fetching item from Marketplace: HTTP 500: Internal server error: database is locked'],
        [json(503, { detail: 'Service is starting' }), 'Error fetching item from Marketplace: HTTP 503: Service is starting'],
        [json(200, { item_type: 'payload', name: 'big', content: { blob: 'x'.repeat(70_000) } }), 'Error fetching item from Marketplace: HTTP 200: the answer is larger than 65536 bytes'],
      ];
      for (const [handler, detail] of cases) {
        stubHandler = handler;
        const reply = await importInto(stubbed, stubbedAdmin, { marketplace_item_id: UNKNOWN, parent_laui: UNKNOWN });
        expect(reply.status, detail).to.equal(500);
        expect(reply.json).to.deep.equal({ detail });
      }
      // Each fetch was the catalog's flat read, with the stored token as Bearer.
      expect(stubSeen.at(-1)).to.deep.equal({ url: `/api/v1/catalog/get?item_laui=${UNKNOWN}`, authorization: `Bearer ${STUB_TOKEN}` });
    });

    it('given a marketplace that redirects to another host, when importing, then 500 and the token never reaches that host', async () => {
      const elsewhere: Array<string | undefined> = [];
      const thief = await listen((request, response) => {
        elsewhere.push(request.headers.authorization);
        json(200, { item_type: 'payload', name: 'p', content: {} })(request, response);
      });
      stubHandler = (_request, response) => {
        response.writeHead(307, { location: `${thief.url}/api/v1/catalog/get?item_laui=${UNKNOWN}` });
        response.end();
      };
      const reply = await importInto(stubbed, stubbedAdmin, { marketplace_item_id: UNKNOWN, parent_laui: UNKNOWN });
      await closeServer(thief.server);
      expect(reply.status).to.equal(500);
      expect((reply.json as { detail: string }).detail).to.match(/^Error fetching item from Marketplace: HTTP 307: redirects are not followed/);
      expect(elsewhere).to.deep.equal([]);
    });

    it('given a marketplace that accepts and never answers, when importing, then 500 Error connecting to Marketplace after MARKETPLACE_TIMEOUT_SECONDS', async () => {
      stubHandler = () => undefined;
      const started = Date.now();
      const reply = await importInto(stubbed, stubbedAdmin, { marketplace_item_id: UNKNOWN, parent_laui: UNKNOWN });
      expect(reply.status).to.equal(500);
      expect(reply.json).to.deep.equal({ detail: 'Error connecting to Marketplace: no complete answer within 1 s' });
      // Not before the timeout (a lower bound only); the stub never answers, so without it the test's timeout would end this.
      expect(Date.now() - started).to.be.at.least(900);
    });

    it('given a marketplace item that fails the schema (an operator name without .operator), when importing, then 422 {summary, validation_context} with the create entries', async () => {
      const stubTree = await catalogClient(stubbed, stubbedAdmin).bootstrap('stub-account', 'p');
      stubHandler = json(200, { laui: UNKNOWN, item_type: 'operator', name: 'not an operator name', codeblock: 'code as a string' });
      const reply = await importInto(stubbed, stubbedAdmin, { marketplace_item_id: UNKNOWN, parent_laui: stubTree.folders.operator });
      expect(reply.status).to.equal(422);
      const detail = (reply.json as { detail: { summary: string; validation_context: { item_type: string; operation: string; errors: Array<{ loc: string[] }> } } }).detail;
      expect(detail.summary).to.match(/^Imported item validation failed with 2 errors: /);
      expect(detail.validation_context).to.include({ item_type: 'operator', operation: 'import', name: 'not an operator name' });
      expect(detail.validation_context.errors.map((entry) => entry.loc.join('.')).sort()).to.deep.equal(['body.codeblock', 'body.name']);
    });

    it("given a crafted item that grants access and names the marketplace's references, when imported, then the importer alone owns it and none of that is kept", async () => {
      const stubTree = await catalogClient(stubbed, stubbedAdmin).bootstrap('stub-account-2', 'p');
      const me = (await stubbed.client().get('/api/v1/user/me', { token: stubbedAdmin })).json as { laui: string };
      stubHandler = json(200, {
        laui: UNKNOWN,
        item_type: 'payload',
        name: 'crafted',
        content: { a: 1 },
        access: { owners: { [UNKNOWN]: 'true' }, editors: {}, viewers: {} },
        access_patch: { add: { owners: { [UNKNOWN]: 'true' } } },
        created_by: UNKNOWN,
        version: 9,
        run_by: UNKNOWN,
        project_laui: UNKNOWN,
      });
      const reply = await importInto(stubbed, stubbedAdmin, { marketplace_item_id: UNKNOWN, parent_laui: stubTree.folders.payload });
      expect(reply.status, reply.text).to.equal(200);
      const item = (await catalogClient(stubbed, stubbedAdmin).get({ item_laui: (reply.json as { item_laui: string }).item_laui })).json as Record<string, unknown>;
      expect(item.access).to.deep.equal({ owners: { [me.laui]: 'true' }, editors: {}, viewers: {} });
      expect(item).to.include({ created_by: me.laui, version: 1, name: 'crafted' });
      expect(item).to.not.have.any.keys('run_by', 'project_laui', 'access_patch');
    });
  });

  // A suite of its own: mocha runs a suite's own tests before its child suites, and this one reads what they did.
  describe('the token', () => {
    it('given every import above, when their answers and every log file of the four services are read, then no marketplace token appears in any', async () => {
      const tokens = [marketToken, STUB_TOKEN, BOGUS_TOKEN];
      expect(replies.length).to.be.greaterThan(20);
      for (const reply of replies) for (const token of tokens) expect(reply.text.includes(token), reply.text).to.equal(false);
      for (const svc of [market, home, stubbed, down]) {
        await svc.service.logger.flush();
        const files = filesUnder(svc.config.logDir);
        expect(files.length).to.be.greaterThan(0);
        for (const file of files) {
          const text = readFileSync(file, 'utf8');
          for (const token of tokens) expect(text.includes(token), `${file} holds a token`).to.equal(false);
        }
      }
      // The failures were logged, with their reasons.
      await stubbed.service.logger.flush();
      const apiLog = filesUnder(join(stubbed.config.logDir, 'API')).map((file) => readFileSync(file, 'utf8')).join('');
      expect(apiLog).to.include('Marketplace import failed: Error fetching item from Marketplace: HTTP 200: the answer is not JSON');
      // And the importing services' event logs hold the token sealed only.
      const raw = ['events.sqlite', 'events.sqlite-wal']
        .map((file) => join(home.dataDir, file))
        .filter((path) => existsSync(path))
        .map((path) => readFileSync(path).toString('latin1'))
        .join('');
      expect(raw).to.include('MarketplaceTokenUpdated');
      expect(raw.includes(marketToken)).to.equal(false);
    });
  });
});
