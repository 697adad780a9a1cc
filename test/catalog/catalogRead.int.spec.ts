import { expect } from 'chai';
import { startTestService, type TestService } from '../support/testService.ts';
import { catalogClient, createUser, type CatalogClient } from '../support/catalogFixture.ts';

type Page = { items: Array<Record<string, unknown> & { laui: string; children?: Array<{ laui: string }> }>; pagination: Record<string, unknown> };

describe('catalog reads, updates, deletes, links and access (HTTP)', () => {
  let svc: TestService;
  let admin: CatalogClient;
  let tree: Awaited<ReturnType<CatalogClient['bootstrap']>>;
  let payloads: string[];
  before(async () => {
    svc = await startTestService();
    admin = catalogClient(svc, (await svc.login()).token);
    tree = await admin.bootstrap('globex');
    payloads = [];
    for (let index = 0; index < 12; index += 1) {
      payloads.push(await admin.createOk({ item_type: 'payload', name: `p${String(index).padStart(2, '0')}`, parent_laui: tree.folders.payload, content: { n: index } }));
    }
  });
  after(async () => svc.stop());

  describe('GET /catalog/get', () => {
    it('given neither item_laui nor is_root, when called, then 400 with the spec detail', async () => {
      const reply = await admin.get({ item_type: 'payload' });
      expect(reply.status).to.equal(400);
      expect(reply.json).to.deep.equal({ detail: 'either one of item_laui or is_root must be passed' });
    });

    it('given is_root with item_type, when called, then 400 Invalid Field Combination', async () => {
      const reply = await admin.get({ is_root: true, item_type: 'folder.account' });
      expect(reply.status).to.equal(400);
      expect(reply.json).to.deep.equal({
        detail: {
          error_type: 'Invalid Field Combination',
          message: 'is_root cannot be combined with item_type',
          invalid_fields_passed: ['item_type'],
          fields_disallowed_for_root: ['item_laui', 'item_type', 'parent_or_child'],
        },
      });
    });

    it('given per_page 1001 or page 0, when called, then 400 pagination object with the bounds', async () => {
      for (const query of [{ per_page: 1001 }, { page: 0 }] as Array<Record<string, number>>) {
        const reply = await admin.get({ item_laui: tree.folders.payload, ...query });
        expect(reply.status).to.equal(400);
        const detail = (reply.json as { detail: { expected: unknown; issue: string } }).detail;
        expect(detail.expected).to.deep.equal({ per_page: { min: 0, max: 1000 }, page: { min: 1 } });
      }
    });

    it('given an unknown item, when fetched alone, then 404 Item not found with laui', async () => {
      const reply = await admin.get({ item_laui: '65a0000000000000000000aa' });
      expect(reply.status).to.equal(404);
      expect(reply.json).to.deep.equal({ detail: 'Item not found with laui: 65a0000000000000000000aa' });
    });

    it('given an item read alone (its cached JSON), when it changes, then the next read alone shows the change, byte for byte as the general path', async () => {
      // Given: read once, so its JSON is cached
      const laui = payloads[3] as string;
      const fast = (): ReturnType<CatalogClient['getPath']> => admin.getPath(`/get?item_laui=${laui}`);
      // Percent-encoded, the same query goes through parsing, coercion and the schema.
      const general = (): ReturnType<CatalogClient['getPath']> => admin.getPath(`/get?item%5Flaui=${laui}`);
      const before = await fast();
      expect(before.status).to.equal(200);
      expect(before.headers.get('content-type')).to.equal('application/json; charset=utf-8');
      expect(before.json).to.include({ laui, version: 1, deleted_at: null });

      // When: updated, then soft-deleted
      expect((await admin.post('/update', { item_laui: laui, content: { n: 'changed' } })).status).to.equal(200);
      const updated = await fast();
      expect((await admin.post('/delete', { item_laui: laui })).status).to.equal(200);
      const deleted = await fast();

      // Then
      expect(updated.json).to.include({ version: 2 });
      expect((updated.json as { content: unknown }).content).to.deep.equal({ n: 'changed' });
      expect((deleted.json as { deleted_at: unknown }).deleted_at).to.be.a('string');
      const generalReply = await general();
      expect(generalReply.text).to.equal(deleted.text);
      expect(generalReply.headers.get('content-type')).to.equal(deleted.headers.get('content-type'));
      expect((await admin.post(`/restore/${laui}`, {})).status).to.equal(200);
    });

    it('given 12 children, when paged by 5 with page numbers and with tokens, then pages are disjoint, ordered and complete', async () => {
      const first = (await admin.get({ item_laui: tree.folders.payload, per_page: 5 })).json as Page;
      expect(first.items.map((item) => item.laui)).to.deep.equal(payloads.slice(0, 5));
      expect(first.pagination).to.include({ current_page: 1, per_page: 5, has_next: true });
      const second = (await admin.get({ item_laui: tree.folders.payload, per_page: 5, page_token: String(first.pagination.next_page_token) })).json as Page;
      expect(second.items.map((item) => item.laui)).to.deep.equal(payloads.slice(5, 10));
      const third = (await admin.get({ item_laui: tree.folders.payload, per_page: 5, page: 3 })).json as Page;
      expect(third.items.map((item) => item.laui)).to.deep.equal(payloads.slice(10));
      expect(third.pagination).to.include({ has_next: false, next_page_token: null });
    });

    it('given depth 2 from the project, when traversing children, then folders carry their own children', async () => {
      const reply = (await admin.get({ item_laui: tree.project_laui, depth: 2, per_page: 100 })).json as Page;
      const payloadFolder = reply.items.find((item) => item.laui === tree.folders.payload);
      expect(payloadFolder?.children?.map((child) => child.laui)).to.deep.equal(payloads);
    });

    it('given parent traversal, when asked for depth 3 from a payload, then ancestors come nearest first', async () => {
      const reply = (await admin.get({ item_laui: payloads[0] as string, parent_or_child: 'parent', depth: 3 })).json as Page;
      expect(reply.items.map((item) => item.laui)).to.deep.equal([tree.folders.payload, tree.project_laui, tree.account_laui]);
    });

    it('given is_root, when listed, then roots the caller can view are returned', async () => {
      const reply = (await admin.get({ is_root: true, per_page: 100 })).json as Page;
      expect(reply.items.map((item) => item.laui)).to.include(tree.account_laui);
      expect(reply.items.every((item) => item.is_root === true)).to.equal(true);
    });
  });

  describe('POST /catalog/search', () => {
    it('given both or neither filter, when searching, then 422', async () => {
      expect((await admin.search({ item_filter: {}, link_filter: {} })).status).to.equal(422);
      expect((await admin.search({})).status).to.equal(422);
    });

    it('given an item filter with projection and desc order, when searching, then selected fields come newest first', async () => {
      const reply = (await admin.search({
        item_filter: { item_type: 'payload', parent_laui: tree.folders.payload },
        projection: { include: ['name'] },
        pagination: { per_page: 3, sort_order: 'desc' },
      })).json as Page;
      expect(reply.items.map((item) => item.name)).to.deep.equal(['p11', 'p10', 'p09']);
      expect(Object.keys(reply.items[0] ?? {})).to.have.members(['laui', 'item_type', 'pk', 'name']);
    });

    it('given get_by_pk for a task, when searching, then the task is found by its key, and without the key fields 422', async () => {
      const workflow = await admin.createOk({ item_type: 'folder.workflow', name: 'wf', parent_laui: tree.folders.workflow });
      const task = { item_type: 'task', name: 'nightly', parent_laui: workflow, project_laui: tree.project_laui, account_laui: tree.account_laui };
      const laui = await admin.createOk({ ...task, operator_laui: payloads[0], connection_laui: payloads[1] });
      const found = (await admin.search({ item_filter: { ...task, parent_laui: undefined, partition: 'ALL', get_by_pk: true } })).json as Page;
      expect(found.items.map((item) => item.laui)).to.deep.equal([laui]);
      expect(found.items[0]?.pk).to.equal(`nightly-${tree.project_laui}-${tree.account_laui}-ALL`);
      expect((await admin.search({ item_filter: { item_type: 'task', get_by_pk: true } })).status).to.equal(422);
    });
  });

  describe('update, revisions and history', () => {
    it('given an update of a versioned field, when applied, then version 2 exists and version 1 replays the old content', async () => {
      const laui = payloads[2] as string;
      const updated = await admin.post('/update', { item_laui: laui, content: { n: 'two' }, expected_version: 1 });
      expect(updated.status, updated.text).to.equal(200);
      expect(updated.json).to.deep.equal({ item_laui: laui, version: 2 });
      const stale = await admin.post('/update', { item_laui: laui, content: { n: 'three' }, expected_version: 1 });
      expect(stale.status).to.equal(409);
      expect(((await admin.get({ item_laui: laui })).json as { content: unknown }).content).to.deep.equal({ n: 'two' });

      const list = (await admin.getPath(`/get/item_revisions?item_laui=${laui}`)).json as Array<{ laui: string; item_laui: string }>;
      expect(list).to.have.length(2);
      expect(list.every((revision) => revision.item_laui === laui)).to.equal(true);
      const v1 = (await admin.getPath(`/get/item_revisions?item_laui=${laui}&version=1`)).json as Record<string, unknown>;
      expect(v1).to.include({ item_laui: laui, laui: list[0]?.laui, name: 'p02' });
      expect(v1.content).to.deep.equal({ n: 2 });
      expect((await admin.getPath(`/get/item_revisions?item_laui=${laui}&version=9`)).status).to.equal(404);

      const history = (await admin.getPath(`/get/item_history?item_laui=${laui}`)).json as Array<{ event: string; changed_fields: string[]; user_laui: string }>;
      expect(history.map((entry) => entry.event)).to.deep.equal(['ItemCreated', 'ItemUpdated']);
      expect(history[1]?.changed_fields).to.deep.equal(['content']);
      expect(history[1]?.user_laui).to.match(/^[0-9a-f]{24}$/);
    });
  });

  describe('delete, restore and links', () => {
    it('given soft delete, restore and hard delete, when applied, then the item hides, returns, and finally is gone with its key free', async () => {
      const laui = await admin.createOk({ item_type: 'payload', name: 'doomed', parent_laui: tree.folders.payload, content: {} });
      expect((await admin.post('/delete', { item_laui: laui })).status).to.equal(200);
      const hidden = (await admin.get({ item_laui: tree.folders.payload, is_deleted: false, per_page: 100 })).json as Page;
      expect(hidden.items.map((item) => item.laui)).to.not.include(laui);
      expect(((await admin.get({ item_laui: laui })).json as { deleted_at: unknown }).deleted_at).to.be.a('string');
      const restored = await admin.post(`/restore/${laui}`);
      expect(restored.status).to.equal(200);
      expect(((await admin.get({ item_laui: laui })).json as { deleted_at: unknown }).deleted_at).to.equal(null);
      expect((await admin.post('/delete', { item_laui: laui, hard_delete: true })).status).to.equal(200);
      expect((await admin.get({ item_laui: laui })).status).to.equal(404);
      expect((await admin.post('/delete', { item_laui: laui, hard_delete: true })).status).to.equal(404);
      expect((await admin.post(`/restore/${laui}`)).status).to.equal(404);
      await admin.createOk({ item_type: 'payload', name: 'doomed', parent_laui: tree.folders.payload, content: {} });
      const tombstone = (await admin.getPath(`/get/item_history?item_laui=${laui}`)).json as Array<{ event: string }>;
      expect(tombstone.at(-1)?.event).to.equal('ItemHardDeleted');
    });

    it('given a soft link, when linked twice and searched, then one link with true_parent false is listed and the child appears under the parent', async () => {
      const workflow = await admin.createOk({ item_type: 'folder.workflow', name: 'links-wf', parent_laui: tree.folders.workflow });
      const first = await admin.post('/create/link', { parent_laui: workflow, child_laui: payloads[3] });
      const second = await admin.post('/create/link', { parent_laui: workflow, child_laui: payloads[3] });
      expect(first.status).to.equal(200);
      expect(second.json).to.deep.equal(first.json);
      const links = (await admin.search({ link_filter: { parent_laui: workflow } })).json as Page;
      expect(links.items).to.have.length(1);
      expect(links.items[0]).to.include({ child_laui: payloads[3], true_parent: false, parent_type: 'folder.workflow', child_type: 'payload' });
      const children = (await admin.get({ item_laui: workflow, per_page: 10 })).json as Page;
      expect(children.items.map((item) => item.laui)).to.deep.equal([payloads[3]]);
      const trueOnly = (await admin.get({ item_laui: workflow, item_permission: 'is_true_parent' })).json as Page;
      expect(trueOnly.items).to.deep.equal([]);
      const trueLink = await admin.post('/create/link', { parent_laui: tree.folders.payload, child_laui: payloads[3] });
      const trueLinks = (await admin.search({ link_filter: { child_laui: payloads[3], true_parent: true } })).json as Page;
      expect(trueLinks.items[0]?.link_laui).to.equal((trueLink.json as { link_laui: string }).link_laui);
    });
  });

  describe('access control', () => {
    it('given a stranger, when calling every permission-checked route, then 403 Access denied; after being made viewer, reads pass and writes still fail', async () => {
      const stranger = await createUser(svc, admin.token, 'outsider');
      const them = catalogClient(svc, stranger.token);
      const target = payloads[5] as string;
      const denied = [
        await them.get({ item_laui: tree.folders.payload, per_page: 5 }),
        await them.post('/delete', { item_laui: target }),
        await them.post(`/restore/${target}`),
        await them.post('/update', { item_laui: target, content: {} }),
        await them.post('/create/link', { parent_laui: tree.folders.payload, child_laui: target }),
        await them.getPath(`/get/item_history?item_laui=${target}`),
        await them.create({ item_type: 'payload', name: 'x', parent_laui: tree.folders.payload, content: {} }),
      ];
      for (const reply of denied) {
        expect(reply.status, reply.text).to.equal(403);
        expect(reply.json).to.deep.equal({ detail: 'Access denied' });
      }
      const found = (await them.search({ item_filter: { item_type: 'payload' } })).json as Page;
      expect(found.items).to.deep.equal([]);

      const share = await admin.post('/update', { item_laui: tree.folders.payload, access_patch: { add: { viewers: { [stranger.laui]: 'true' } } } });
      expect(share.status, share.text).to.equal(200);
      expect((await them.get({ item_laui: tree.folders.payload, per_page: 5 })).status).to.equal(200);
      expect((await them.search({ item_filter: { item_type: 'payload', name: 'p05' } })).json).to.have.nested.property('items[0].laui', target);
      expect((await them.post('/update', { item_laui: target, content: {} })).status).to.equal(403);
    });

    it('given a group made editor of a folder, when a member creates under it, then it is allowed through the group', async () => {
      const member = await createUser(svc, admin.token, 'member');
      const group = await svc.client().post('/api/v1/group/create', {
        json: { name: 'editors-team', access_patch: { add: { viewers: { [member.laui]: 'true' } } } },
        token: admin.token,
      });
      expect(group.status, group.text).to.equal(200);
      const groups = (await svc.client().get('/api/v1/group/get?relation=all', { token: admin.token })).json as Array<{ laui: string; name: string }>;
      const groupLaui = groups.find((candidate) => candidate.name === 'editors-team')?.laui as string;
      const share = await admin.post('/update', { item_laui: tree.folders.config, access_patch: { add: { editors: { [groupLaui]: 'true' } } } });
      expect(share.status).to.equal(200);
      const created = await catalogClient(svc, member.token).create({ item_type: 'config', name: 'c1', parent_laui: tree.folders.config, config_type: 'task', content: {} });
      expect(created.status, created.text).to.equal(200);
    });
  });

  describe('rebuild', () => {
    it('given the live read models, when rebuilt from the log into a fresh store, then items and links are identical', async () => {
      const { MemoryReadStore } = await import('../../projections/read-store/MemoryReadStore.ts');
      const { ProjectionRunner } = await import('../../projections/runner/ProjectionRunner.ts');
      const { itemsProjection } = await import('../../projections/catalog/itemsProjection.ts');
      const { linksProjection } = await import('../../projections/catalog/linksProjection.ts');
      const fresh = new MemoryReadStore();
      const runner = new ProjectionRunner({ name: 'rebuild', eventStore: svc.service.eventStore, readStore: fresh, projections: [itemsProjection, linksProjection] });
      await runner.start();
      await runner.stop();
      for (const name of ['items', 'links']) {
        const sort = { field: 'id', direction: 'asc' } as const;
        const live = await svc.service.readStore.collection(name).find({ sort });
        const rebuilt = await fresh.collection(name).find({ sort });
        expect(live.length).to.be.greaterThan(10);
        expect(rebuilt).to.deep.equal(live);
      }
    });
  });
});
