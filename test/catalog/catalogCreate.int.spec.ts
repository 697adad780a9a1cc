import { expect } from 'chai';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestService, type TestService } from '../support/testService.ts';
import { catalogClient, createUser, type CatalogClient } from '../support/catalogFixture.ts';

const MISSING = '65a0000000000000000000ff';
type Entry = { type: string; loc: unknown[]; msg: string; expected_format?: Record<string, unknown> };
const entries = (json: unknown) => (json as { detail: Entry[] }).detail;

describe('catalog create, validate and bootstrap (HTTP)', () => {
  let svc: TestService;
  let admin: CatalogClient;
  let tree: Awaited<ReturnType<CatalogClient['bootstrap']>>;
  before(async () => {
    svc = await startTestService();
    admin = catalogClient(svc, (await svc.login()).token);
    tree = await admin.bootstrap('acme');
  });
  after(async () => svc.stop());

  it('given bootstrap, when called twice, then the same standard tree is returned and nothing is created again', async () => {
    expect(Object.keys(tree.folders)).to.have.members(['trash', 'users', 'action', 'asset', 'workflow', 'operator', 'payload', 'connection', 'bootstrap', 'config', 'ai']);
    const again = await admin.bootstrap('acme');
    expect(again.account_laui).to.equal(tree.account_laui);
    expect(again.folders).to.deep.equal(tree.folders);
    expect((again as unknown as { created: string[] }).created).to.deep.equal([]);
    const project = await admin.get({ item_laui: tree.project_laui });
    expect(project.json).to.include({ item_type: 'folder.project', name: 'main', parent_laui: tree.account_laui, version: 1 });
  });

  it('given a valid operator, when created, then 200 with its laui and the flat item reads back with service fields', async () => {
    const laui = await admin.createOk({
      item_type: 'operator',
      name: 'extract.operator',
      parent_laui: tree.folders.operator,
      codeblock: { language: 'python', code: 'def run(c, p, ctx):\n  return {"status": "success"}' },
    });
    const item = (await admin.get({ item_laui: laui })).json as Record<string, unknown>;
    expect(item).to.include({ laui, item_type: 'operator', name: 'extract.operator', version: 1, deleted_at: null, is_root: false });
    expect(item.created_at).to.be.a('string');
    expect(item.access).to.have.nested.property('owners').that.is.an('object');
  });

  it('given a name that does not match the operator pattern, when created, then 422 names the regex', async () => {
    const reply = await admin.create({ item_type: 'operator', name: 'bad name', parent_laui: tree.folders.operator });
    expect(reply.status).to.equal(422);
    const entry = entries(reply.json).find((candidate) => candidate.loc.includes('name'));
    expect(entry?.type).to.equal('string_pattern_mismatch');
    expect(entry?.expected_format).to.include({ name: 'name', required: true });
    expect(String(entry?.expected_format?.regex)).to.include('operator');
  });

  it('given wrong field types and an unknown item type, when created, then 422 lists them', async () => {
    const wrong = await admin.create({ item_type: 'connection', name: 'db', parent_laui: tree.folders.connection, max_parallelism: 'three' });
    expect(wrong.status).to.equal(422);
    expect(entries(wrong.json).some((entry) => entry.loc.includes('max_parallelism'))).to.equal(true);
    const unknown = await admin.create({ item_type: 'spaceship', name: 'x', parent_laui: tree.folders.connection });
    expect(unknown.status).to.equal(422);
    expect(entries(unknown.json)[0]?.loc).to.deep.equal(['body', 'item_type']);
  });

  it('given is_root with a parent, or neither, when created, then 422 with the rules entry', async () => {
    for (const body of [
      { item_type: 'folder.account', name: 'x', is_root: true, parent_laui: tree.account_laui },
      { item_type: 'folder.project', name: 'x' },
    ]) {
      const reply = await admin.create(body);
      expect(reply.status).to.equal(422);
      expect(entries(reply.json).some((entry) => entry.type === 'rules')).to.equal(true);
    }
  });

  it('given invalid ObjectIds in body and path, when posted, then 422 Invalid ObjectId entries', async () => {
    const create = await admin.create({ item_type: 'folder.project', name: 'x', parent_laui: 'not-an-id' });
    expect(create.status).to.equal(422);
    expect(entries(create.json).find((entry) => entry.loc.includes('parent_laui'))?.msg).to.match(/ObjectId/);
    const restore = await admin.post('/restore/xyz');
    expect(restore.status).to.equal(422);
    expect(entries(restore.json)[0]).to.include({ type: 'value_error', msg: 'Invalid ObjectId' });
    const link = await admin.post('/create/link', { parent_laui: 'x', child_laui: tree.account_laui });
    expect(link.status).to.equal(422);
  });

  it('given a missing or soft-deleted parent, when created, then 404 Item not found with laui', async () => {
    const missing = await admin.create({ item_type: 'folder.project', name: 'p', parent_laui: MISSING });
    expect(missing.status).to.equal(404);
    expect(missing.json).to.deep.equal({ detail: `Item not found with laui: ${MISSING}` });
    const folder = await admin.createOk({ item_type: 'folder.payload', name: 'tmp', parent_laui: tree.folders.payload });
    expect((await admin.post('/delete', { item_laui: folder })).status).to.equal(200);
    const underDeleted = await admin.create({ item_type: 'payload', name: 'p1', parent_laui: folder, content: {} });
    expect(underDeleted.status).to.equal(404);
    expect(underDeleted.json).to.deep.equal({ detail: `Item not found with laui: ${folder}` });
  });

  it('given a child type the parent does not allow, when created, then 422 object with the allowed types', async () => {
    const reply = await admin.create({ item_type: 'payload', name: 'p', parent_laui: tree.folders.operator, content: {} });
    expect(reply.status).to.equal(422);
    const detail = (reply.json as { detail: { message: string; item_type_passed: string; allowed_item_types: string[] } }).detail;
    expect(detail.item_type_passed).to.equal('payload');
    expect(detail.allowed_item_types).to.have.members(['folder.operator', 'operator']);
  });

  it('given 100 concurrent creates of one task key, when they race, then exactly one 200 and 99 409', async () => {
    const workflow = await admin.createOk({ item_type: 'folder.workflow', name: 'wf', parent_laui: tree.folders.workflow });
    const body = {
      item_type: 'task',
      name: 'daily-load',
      parent_laui: workflow,
      project_laui: tree.project_laui,
      account_laui: tree.account_laui,
      operator_laui: MISSING,
      connection_laui: MISSING,
    };
    const replies = await Promise.all(Array.from({ length: 100 }, () => admin.create(body)));
    expect(replies.filter((reply) => reply.status === 200)).to.have.length(1);
    const conflicts = replies.filter((reply) => reply.status === 409);
    expect(conflicts).to.have.length(99);
    expect(conflicts[0]?.json).to.deep.equal({ detail: 'Item already exists with the same unique key' });
    // Another partition is another key.
    expect((await admin.create({ ...body, partition: 'EU' })).status).to.equal(200);
  });

  it('given validate, when the body is good or bad, then it answers as create would without creating', async () => {
    const good = await admin.post('/validate', { item_type: 'payload', name: 'p-valid', parent_laui: tree.folders.payload, content: { a: 1 } });
    expect(good.status).to.equal(200);
    expect(good.json).to.include({ valid: true, item_type: 'payload' });
    const listed = await admin.search({ item_filter: { item_type: 'payload', name: 'p-valid' } });
    expect((listed.json as { items: unknown[] }).items).to.have.length(0);
    const bad = await admin.post('/validate', { item_type: 'payload', name: 'p', parent_laui: tree.folders.operator });
    const badCreate = await admin.create({ item_type: 'payload', name: 'p', parent_laui: tree.folders.operator });
    expect(bad.status).to.equal(badCreate.status);
    expect(bad.json).to.deep.equal(badCreate.json);
  });

  it('given a user without EDIT on the parent, when creating under it, then 403 Access denied', async () => {
    const stranger = catalogClient(svc, (await createUser(svc, admin.token, 'stranger')).token);
    const reply = await stranger.create({ item_type: 'folder.project', name: 'intrusion', parent_laui: tree.account_laui });
    expect(reply.status).to.equal(403);
    expect(reply.json).to.deep.equal({ detail: 'Access denied' });
    // Its own root is fine.
    const own = await stranger.bootstrap('stranger-co');
    expect(own.account_laui).to.match(/^[0-9a-f]{24}$/);
  });

  it('given supported-types, when fetched, then every type of the hierarchy is described with its allowed children', async () => {
    const reply = await admin.getPath('/item-types/supported-types');
    expect(reply.status).to.equal(200);
    const types = (reply.json as { types: Array<{ item_type: string; allowed_children: string[] }> }).types;
    const byType = new Map(types.map((type) => [type.item_type, type]));
    expect(byType.get('folder.account')?.allowed_children).to.have.members(['folder.project', 'folder.trash', 'folder.users']);
    expect(byType.has('task')).to.equal(true);
  });

  it('given a connection with credentials, when stored, then the log and the read model hold only ciphertext and reads are masked', async () => {
    const secret = 'sup3r-s3cret-passw0rd';
    const laui = await admin.createOk({
      item_type: 'connection.postgresql',
      name: 'warehouse',
      parent_laui: tree.folders.connection,
      content: { host: 'db.internal', password: secret },
      max_parallelism: 3,
    });
    const item = (await admin.get({ item_laui: laui })).json as { content: unknown; version: number };
    expect(item.content).to.deep.equal({ host: 'db.internal', password: '********' });
    const raw = ['events.sqlite', 'events.sqlite-wal']
      .map((file) => join(svc.dataDir, file))
      .filter((path) => existsSync(path))
      .map((path) => readFileSync(path).toString('latin1'))
      .join('');
    expect(raw).to.include('warehouse');
    expect(raw).to.not.include(secret);
    expect(JSON.stringify(await svc.service.readStore.collection('items').get(laui))).to.not.include(secret);

    const same = await admin.post('/update', { item_laui: laui, content: { host: 'db.internal', password: secret } });
    expect(same.json).to.deep.equal({ item_laui: laui, version: 1 });
    const rotated = await admin.post('/update', { item_laui: laui, content: { host: 'db.internal', password: 'new-one' } });
    expect(rotated.json).to.deep.equal({ item_laui: laui, version: 2 });
    const history = JSON.stringify((await admin.getPath(`/get/item_history?item_laui=${laui}`)).json);
    expect(history).to.not.include('new-one');
  });
});
