import { expect } from 'chai';
import { startTestService, type TestService } from '../support/testService.ts';
import { catalogClient, createUser, type CatalogClient } from '../support/catalogFixture.ts';

type RevisionRef = { laui: string; item_laui: string; version: number };

describe('POST /catalog/restore_revision (issue 36)', () => {
  let svc: TestService;
  let admin: CatalogClient;
  let tree: Awaited<ReturnType<CatalogClient['bootstrap']>>;
  before(async () => {
    svc = await startTestService();
    admin = catalogClient(svc, (await svc.login()).token);
    tree = await admin.bootstrap('restorers');
  });
  after(async () => svc.stop());

  const revisions = async (laui: string): Promise<RevisionRef[]> => (await admin.getPath(`/get/item_revisions?item_laui=${laui}`)).json as RevisionRef[];
  const update = async (body: Record<string, unknown>) => {
    const reply = await admin.post('/update', body);
    expect(reply.status, reply.text).to.equal(200);
  };

  it('given a payload edited twice, when its first revision is restored at the current version, then a new version with the old content, the same place and access, and ItemRevisionRestored in history', async () => {
    // Given
    const laui = await admin.createOk({ item_type: 'payload', name: 'restored', parent_laui: tree.folders.payload, content: { n: 1 } });
    await update({ item_laui: laui, content: { n: 2 } });
    await update({ item_laui: laui, content: { n: 3 }, description: 'third' });
    await update({ item_laui: laui, state: 'runtime' });
    const [first] = await revisions(laui);
    const before = (await admin.get({ item_laui: laui })).json as Record<string, unknown>;
    // When
    const reply = await admin.post('/restore_revision', { item_laui: laui, revision_laui: first?.laui, expected_version: 3 });
    // Then
    expect(reply.status, reply.text).to.equal(200);
    expect(reply.json).to.deep.equal({ item_laui: laui, version: 4, restored_revision_laui: first?.laui });
    const after = (await admin.get({ item_laui: laui })).json as Record<string, unknown>;
    // The versioned fields are the revision's (description too); the others stay as they are.
    expect(after).to.include({ version: 4, parent_laui: before.parent_laui, name: 'restored', description: null, state: 'runtime' });
    expect(after.content).to.deep.equal({ n: 1 });
    expect(after.access).to.deep.equal(before.access);
    const list = await revisions(laui);
    expect(list.map((revision) => revision.version)).to.deep.equal([1, 2, 3, 4]);
    const history = (await admin.getPath(`/get/item_history?item_laui=${laui}`)).json as Array<{ event: string; version: number | null; changed_fields: string[] }>;
    expect(history.at(-1)).to.deep.include({ event: 'ItemRevisionRestored', version: 4, changed_fields: ['description', 'content'] });
    const events = await svc.service.eventStore.readStream(`item-${laui}`);
    expect(events.at(-1)?.data).to.deep.include({ restored_revision_laui: first?.laui, restored_version: 1 });
  });

  it('given a stale expected_version, when restoring, then 409 with the version conflict and nothing written', async () => {
    const laui = await admin.createOk({ item_type: 'payload', name: 'stale', parent_laui: tree.folders.payload, content: { n: 1 } });
    await update({ item_laui: laui, content: { n: 2 } });
    const [first] = await revisions(laui);
    const reply = await admin.post('/restore_revision', { item_laui: laui, revision_laui: first?.laui, expected_version: 1 });
    expect(reply.status).to.equal(409);
    expect(reply.json).to.deep.equal({ detail: 'Item version conflict: expected version 1, current version 2' });
    expect(((await admin.get({ item_laui: laui })).json as { version: number }).version).to.equal(2);
  });

  it('given a revision of another item, when restored onto this one, then 404 Revision not found', async () => {
    const mine = await admin.createOk({ item_type: 'payload', name: 'mine', parent_laui: tree.folders.payload, content: { n: 1 } });
    const other = await admin.createOk({ item_type: 'payload', name: 'other', parent_laui: tree.folders.payload, content: { secret: 'x' } });
    const [foreign] = await revisions(other);
    const reply = await admin.post('/restore_revision', { item_laui: mine, revision_laui: foreign?.laui, expected_version: 1 });
    expect(reply.status).to.equal(404);
    expect(reply.json).to.deep.equal({ detail: 'Revision not found' });
    expect(((await admin.get({ item_laui: mine })).json as { content: unknown }).content).to.deep.equal({ n: 1 });
  });

  it('given a viewer without EDIT (and a stranger), when restoring, then 403 Access denied; a bad body is 422', async () => {
    const viewer = await createUser(svc, admin.token, 'restore-viewer');
    const stranger = await createUser(svc, admin.token, 'restore-stranger');
    const laui = await admin.createOk({
      item_type: 'payload',
      name: 'guarded',
      parent_laui: tree.folders.payload,
      content: { n: 1 },
      access_patch: { add: { viewers: { [viewer.laui]: 'true' } } },
    });
    await update({ item_laui: laui, content: { n: 2 } });
    const [first] = await revisions(laui);
    for (const caller of [viewer, stranger]) {
      const reply = await catalogClient(svc, caller.token).post('/restore_revision', { item_laui: laui, revision_laui: first?.laui, expected_version: 2 });
      expect(reply.status).to.equal(403);
      expect(reply.json).to.deep.equal({ detail: 'Access denied' });
    }
    expect((await admin.post('/restore_revision', { item_laui: laui, revision_laui: first?.laui })).status).to.equal(422);
    expect((await admin.post('/restore_revision', { item_laui: laui, revision_laui: 'nope', expected_version: 2 })).status).to.equal(422);
  });

  it('given a connection whose password changed, when its first revision is restored, then the log holds the first sealed value as stored, never the password in clear', async () => {
    const laui = await admin.createOk({ item_type: 'connection', name: 'db-restore', parent_laui: tree.folders.connection, content: { host: 'h1', password: 'first-password' } });
    await update({ item_laui: laui, content: { host: 'h2', password: 'second-password' } });
    const [first] = await revisions(laui);
    const reply = await admin.post('/restore_revision', { item_laui: laui, revision_laui: first?.laui, expected_version: 2 });
    expect(reply.status, reply.text).to.equal(200);
    const events = await svc.service.eventStore.readStream(`item-${laui}`);
    const created = (events[0]?.data as { fields: { content: unknown } }).fields.content;
    const restored = (events.at(-1)?.data as { changes: { content: unknown } }).changes.content;
    expect(restored).to.deep.equal(created);
    expect(JSON.stringify(events.map((event) => event.data))).to.not.include('first-password');
    const item = (await admin.get({ item_laui: laui })).json as { content: Record<string, unknown> };
    expect(item.content).to.deep.equal({ host: 'h1', password: '********' });
  });
});
