import { expect } from 'chai';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestService, type TestService } from '../support/testService.ts';
import { catalogClient, createUser, type CatalogClient } from '../support/catalogFixture.ts';

type Page = { items: Array<Record<string, unknown> & { laui: string }>; pagination: Record<string, unknown> };
type Entry = { event: string; at: string };

describe('GET /catalog/get with as_of (issue 36)', () => {
  let svc: TestService;
  let admin: CatalogClient;
  let tree: Awaited<ReturnType<CatalogClient['bootstrap']>>;
  before(async () => {
    svc = await startTestService();
    admin = catalogClient(svc, (await svc.login()).token);
    tree = await admin.bootstrap('historians');
  });
  after(async () => svc.stop());

  /** Writes land in distinct milliseconds, so that an event's own time names the state it left. */
  const ok = async (path: string, body: Record<string, unknown>, api = admin) => {
    await sleep(3);
    const reply = await api.post(path, body);
    expect(reply.status, reply.text).to.equal(200);
    await sleep(3);
  };
  const history = async (laui: string): Promise<Entry[]> => (await admin.getPath(`/get/item_history?item_laui=${laui}`)).json as Entry[];
  const justBefore = (at: string): string => new Date(Date.parse(at) - 1).toISOString();

  it('given a payload created, edited and deleted, when read as of each moment, then 404 before it existed, each content of then, and deleted_at once deleted', async () => {
    // Given
    const laui = await admin.createOk({ item_type: 'payload', name: 'timeline', parent_laui: tree.folders.payload, content: { n: 1 } });
    await ok('/update', { item_laui: laui, content: { n: 2 } });
    await ok('/delete', { item_laui: laui });
    const [created, edited, deleted] = await history(laui);
    // When / then
    const before = await admin.get({ item_laui: laui, as_of: justBefore(created?.at as string) });
    expect(before.status).to.equal(404);
    expect(before.json).to.deep.equal({ detail: `Item not found with laui: ${laui}` });
    const first = (await admin.get({ item_laui: laui, as_of: created?.at as string })).json as Record<string, unknown>;
    expect(first).to.include({ laui, version: 1, deleted_at: null });
    expect(first.content).to.deep.equal({ n: 1 });
    const second = (await admin.get({ item_laui: laui, as_of: justBefore(deleted?.at as string) })).json as Record<string, unknown>;
    expect(second).to.include({ version: 2, deleted_at: null, updated_at: edited?.at });
    expect(second.content).to.deep.equal({ n: 2 });
    const gone = (await admin.get({ item_laui: laui, as_of: deleted?.at as string })).json as Record<string, unknown>;
    expect(gone.deleted_at).to.be.a('string');
    // A future instant reads as now (the whole log), the current row's fields included.
    const now = (await admin.get({ item_laui: laui })).json as Record<string, unknown>;
    expect((await admin.get({ item_laui: laui, as_of: '2999-01-01T00:00:00Z' })).json).to.deep.equal(now);
  });

  it('given a malformed as_of (no zone, not a time, as_of with is_root or parent traversal), when read, then 400 with the spec detail, never a 500', async () => {
    for (const as_of of ['2026-01-01T00:00:00', 'yesterday', '2026-13-45T99:00:00Z', '']) {
      const reply = await admin.get({ item_laui: tree.folders.payload, as_of });
      expect(reply.status, as_of).to.equal(400);
      expect((reply.json as { detail: string }).detail).to.match(/^Invalid argument: as_of must be an ISO 8601 time/);
    }
    const parent = await admin.get({ item_laui: tree.folders.payload, parent_or_child: 'parent', as_of: '2026-01-01T00:00:00Z' });
    expect(parent.status).to.equal(400);
    expect((await admin.get({ is_root: true, as_of: '2026-01-01T00:00:00Z' })).status).to.equal(400);
  });

  it('given a folder whose children came and went, when listed as of a moment, then the children of then, as they were then', async () => {
    const folder = await admin.createOk({ item_type: 'folder.payload', name: 'then-and-now', parent_laui: tree.folders.payload });
    const early = await admin.createOk({ item_type: 'payload', name: 'early', parent_laui: folder, content: { v: 'old' } });
    await ok('/update', { item_laui: early, content: { v: 'new' } });
    const [, changed] = await history(early);
    const moment = justBefore(changed?.at as string);
    await ok('/delete', { item_laui: early });
    await admin.createOk({ item_type: 'payload', name: 'late', parent_laui: folder, content: {} });

    const then = (await admin.get({ item_laui: folder, parent_or_child: 'child', as_of: moment })).json as Page;
    expect(then.items.map((item) => item.name)).to.deep.equal(['early']);
    expect(then.items[0]?.content).to.deep.equal({ v: 'old' });
    expect(then.items[0]?.deleted_at).to.equal(null);
    const now = (await admin.get({ item_laui: folder, parent_or_child: 'child', as_of: new Date(Date.now() + 1000).toISOString() })).json as Page;
    expect(now.items.map((item) => [item.name, item.deleted_at === null])).to.deep.equal([['early', false], ['late', true]]);
    const hidden = (await admin.get({ item_laui: folder, parent_or_child: 'child', is_deleted: false, as_of: new Date(Date.now() + 1000).toISOString() })).json as Page;
    expect(hidden.items.map((item) => item.name)).to.deep.equal(['late']);
  });

  it('given a folder shared with a user only later, when they list it as of before the share, then 403; as of after it, the children; a connection shows them its keys only while they could not VIEW it', async () => {
    const reader = await createUser(svc, admin.token, 'time-reader');
    const api = catalogClient(svc, reader.token);
    const folder = await admin.createOk({ item_type: 'folder.payload', name: 'shared-later', parent_laui: tree.folders.payload });
    await admin.createOk({ item_type: 'payload', name: 'inside', parent_laui: folder, content: { n: 1 } });
    const connection = await admin.createOk({ item_type: 'connection', name: 'db-then', parent_laui: tree.folders.connection, content: { host: 'h', password: 'pw-then' } });
    await ok('/update', { item_laui: folder, access_patch: { add: { viewers: { [reader.laui]: 'true' } } } });
    await ok('/update', { item_laui: connection, access_patch: { add: { viewers: { [reader.laui]: 'true' } } } });
    const shared = (await history(folder)).find((entry) => entry.event === 'ItemAccessChanged') as Entry;
    const connectionShared = (await history(connection)).find((entry) => entry.event === 'ItemAccessChanged') as Entry;

    const refused = await api.get({ item_laui: folder, parent_or_child: 'child', as_of: justBefore(shared.at) });
    expect(refused.status).to.equal(403);
    expect(refused.json).to.deep.equal({ detail: 'Access denied' });
    const listed = (await api.get({ item_laui: folder, parent_or_child: 'child', as_of: shared.at })).json as Page;
    expect(listed.items.map((item) => item.name)).to.deep.equal(['inside']);

    const unseen = (await api.get({ item_laui: connection, as_of: justBefore(connectionShared.at) })).json as { content: unknown };
    expect(unseen.content).to.deep.equal({ host: '********', password: '********' });
    const seen = (await api.get({ item_laui: connection, as_of: connectionShared.at })).json as { content: unknown };
    expect(seen.content).to.deep.equal({ host: 'h', password: '********' });
  });

  it('given an item soft-linked into a folder, when the folder is listed as of before and after the link, then it is a child only after', async () => {
    const folder = await admin.createOk({ item_type: 'folder.workflow', name: 'linking', parent_laui: tree.folders.workflow });
    const elsewhere = await admin.createOk({ item_type: 'payload', name: 'linked-payload', parent_laui: tree.folders.payload, content: {} });
    await sleep(3);
    const linked = await admin.post('/create/link', { parent_laui: folder, child_laui: elsewhere });
    expect(linked.status, linked.text).to.equal(200);
    await sleep(3);
    const link = ((await admin.search({ link_filter: { parent_laui: folder, child_laui: elsewhere } })).json as { items: Array<{ created_at: string }> }).items[0];
    const listed = async (as_of: string) => ((await admin.get({ item_laui: folder, parent_or_child: 'child', as_of })).json as Page).items.map((item) => item.laui);
    expect(await listed(justBefore(link?.created_at as string))).to.deep.equal([]);
    expect(await listed(link?.created_at as string)).to.deep.equal([elsewhere]);
  });

  it('given a hard-deleted item, when read as of a time it existed, then 404', async () => {
    const laui = await admin.createOk({ item_type: 'payload', name: 'erased', parent_laui: tree.folders.payload, content: {} });
    const [created] = await history(laui);
    await ok('/delete', { item_laui: laui, hard_delete: true });
    expect((await admin.get({ item_laui: laui, as_of: created?.at as string })).status).to.equal(404);
  });
});
