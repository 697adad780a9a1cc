import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestService, type TestService } from '../support/testService.ts';
import { catalogClient, createUser, type CatalogClient } from '../support/catalogFixture.ts';

type Tree = Awaited<ReturnType<CatalogClient['bootstrap']>>;
type Item = Record<string, unknown> & { config_type?: string; content?: unknown; deleted_at?: string | null; version?: number };

const DENIED = { detail: 'Access denied' };
const UNKNOWN = '65a0c0ffee0000000000beef';
/** What the stub marketplace serves for any id: a system config that would cut every task to 10 s. */
const MARKET_SYSTEM_CONFIG = { laui: UNKNOWN, item_type: 'config', name: 'market-settings', config_type: 'system', content: { check_completion_timeout_seconds: 10 } };

/**
 * System configs are the administrators' (docs/decisions.md, README Security): every catalog write
 * route that can make, change or remove a config of config_type system, over HTTP, with mallory (a
 * plain user holding every role the route asks for) and the administrator.
 */
describe('system configs: only administrators write them, on every catalog write route', function () {
  this.timeout(60_000);
  let svc: TestService;
  let market: Server;
  let admin: CatalogClient;
  let her: CatalogClient;
  let mallory: { laui: string; token: string };
  let tree: Tree;
  let hers: Tree;

  const item = async (laui: string): Promise<Item> => {
    const reply = await admin.get({ item_laui: laui });
    expect(reply.status, reply.text).to.equal(200);
    return reply.json as Item;
  };
  const named = async (name: string): Promise<unknown[]> =>
    ((await admin.search({ item_filter: { item_type: 'config', name } })).json as { items: unknown[] }).items;
  const expectDenied = (reply: { status: number; json: unknown; text: string }) => {
    expect(reply.status, reply.text).to.equal(403);
    expect(reply.json).to.deep.equal(DENIED);
  };
  /** An administrator's system config that mallory owns too: she holds every right the routes check. */
  const sharedSystemConfig = async (name: string): Promise<string> => {
    const laui = await admin.createOk({ item_type: 'config', name, parent_laui: tree.folders.config, config_type: 'system', content: { check_completion_timeout_seconds: 3600 } });
    const shared = await admin.post('/update', { item_laui: laui, access_patch: { add: { owners: { [mallory.laui]: 'true' } } } });
    expect(shared.status, shared.text).to.equal(200);
    return laui;
  };

  before(async () => {
    market = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify(MARKET_SYSTEM_CONFIG));
    });
    await new Promise<void>((resolve) => market.listen(0, '127.0.0.1', resolve));
    svc = await startTestService({ WORKER_POOL_SIZE: '0', MARKETPLACE_URL: `http://127.0.0.1:${(market.address() as AddressInfo).port}` });
    admin = catalogClient(svc, (await svc.login()).token);
    tree = await admin.bootstrap('sys-co');
    mallory = await createUser(svc, admin.token, 'mallory');
    her = catalogClient(svc, mallory.token);
    hers = await her.bootstrap('mallory-co');
  });
  after(async () => {
    await svc?.stop();
    market?.closeAllConnections();
    await new Promise<void>((resolve) => (market ? market.close(() => resolve()) : resolve()));
  });

  it('given a plain user with EDIT on her config folder, when she creates (or validates) a system config, then 403 and nothing is written: its name stays free', async () => {
    const body = { item_type: 'config', name: 'fast-timeouts', parent_laui: hers.folders.config, config_type: 'system', content: { check_completion_timeout_seconds: 10 } };
    expectDenied(await her.post('/validate', body));
    expectDenied(await her.create(body));
    expect(await named('fast-timeouts')).to.have.length(0);
    // A reservation of the unique key would make this 409.
    const normal = await her.createOk({ ...body, config_type: 'task', content: { parameters: {} } });
    expect(await item(normal)).to.include({ config_type: 'task' });
  });

  it('given her own normal config, when she updates it into a system config, then 403 and it is unchanged', async () => {
    const laui = await her.createOk({ item_type: 'config', name: 'to-promote', parent_laui: hers.folders.config, config_type: 'task', content: { parameters: { a: 1 } } });
    expectDenied(await her.post('/update', { item_laui: laui, config_type: 'system', content: { check_completion_timeout_seconds: 10 } }));
    expect(await item(laui)).to.deep.include({ config_type: 'task', content: { parameters: { a: 1 } }, version: 1 });
  });

  it("given an administrator's system config she co-owns, when she changes its content, its access or its type, then 403 each and it is unchanged", async () => {
    const laui = await sharedSystemConfig('shared-settings');
    expectDenied(await her.post('/update', { item_laui: laui, content: { check_completion_timeout_seconds: 10 } }));
    expectDenied(await her.post('/update', { item_laui: laui, access_patch: { remove: { owners: { [mallory.laui]: 'true' } } } }));
    expectDenied(await her.post('/update', { item_laui: laui, config_type: 'task' }));
    expectDenied(await her.post('/update', { item_laui: laui, name: 'renamed-settings' }));
    expect(await item(laui)).to.deep.include({ config_type: 'system', name: 'shared-settings', content: { check_completion_timeout_seconds: 3600 } });
  });

  it("given an administrator's system config she co-owns, when she deletes it (soft or hard) or restores it, then 403 each", async () => {
    const laui = await sharedSystemConfig('shared-settings-2');
    expectDenied(await her.post('/delete', { item_laui: laui }));
    expectDenied(await her.post('/delete', { item_laui: laui, hard_delete: true }));
    // With parent_laui the delete also removes a link: refused before that, so the link stays.
    const linked = await admin.post('/create/link', { parent_laui: hers.folders.config, child_laui: laui });
    expect(linked.status, linked.text).to.equal(200);
    expectDenied(await her.post('/delete', { item_laui: laui, parent_laui: hers.folders.config }));
    const links = await admin.get({ item_laui: hers.folders.config, parent_or_child: 'child' });
    expect(links.text).to.include(laui);
    expect(await item(laui)).to.include({ deleted_at: null });
    const deleted = await admin.post('/delete', { item_laui: laui });
    expect(deleted.status, deleted.text).to.equal(200);
    expectDenied(await her.post(`/restore/${laui}`));
    expect((await item(laui)).deleted_at).to.be.a('string');
  });

  it('given an administrator, when they create, change, turn, delete and restore system configs, then each is done', async () => {
    const laui = await admin.createOk({ item_type: 'config', name: 'admin-settings', parent_laui: tree.folders.config, config_type: 'system', content: { action_timeout_seconds: 60 } });
    expect((await admin.post('/update', { item_laui: laui, content: { action_timeout_seconds: 90 } })).status).to.equal(200);
    const normal = await admin.createOk({ item_type: 'config', name: 'admin-normal', parent_laui: tree.folders.config, config_type: 'task', content: {} });
    expect((await admin.post('/update', { item_laui: normal, config_type: 'system' })).status).to.equal(200);
    expect(await item(normal)).to.include({ config_type: 'system' });
    expect((await admin.post('/delete', { item_laui: laui })).status).to.equal(200);
    expect((await admin.post(`/restore/${laui}`)).status).to.equal(200);
    expect(await item(laui)).to.deep.include({ deleted_at: null, content: { action_timeout_seconds: 90 } });
    expect((await admin.post('/delete', { item_laui: normal, hard_delete: true })).status).to.equal(200);
  });

  it('given a marketplace serving a system config, when a plain user imports it, then 403 and nothing is written; an administrator imports it', async () => {
    for (const token of [mallory.token, admin.token]) {
      const stored = await svc.client().post('/api/v1/user/marketplace_access_token/update', { json: { marketplace_access_token: 'market-token' }, token });
      expect(stored.status, stored.text).to.equal(200);
    }
    const imported = (token: string, parent: string) => svc.client().post('/api/v1/marketplace/import', { json: { marketplace_item_id: UNKNOWN, parent_laui: parent }, token });
    expectDenied(await imported(mallory.token, hers.folders.config));
    expect(await named(MARKET_SYSTEM_CONFIG.name)).to.have.length(0);
    const reply = await imported(admin.token, tree.folders.config);
    expect(reply.status, reply.text).to.equal(200);
    expect(await item((reply.json as { item_laui: string }).item_laui)).to.include({ config_type: 'system' });
  });
});
