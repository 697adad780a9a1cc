import { expect } from 'chai';
import { startTestService, type TestService } from '../support/testService.ts';
import { catalogClient, createUser, type CatalogClient } from '../support/catalogFixture.ts';

type Tree = Awaited<ReturnType<CatalogClient['bootstrap']>>;
type Link = { laui: string; parent_laui: string; child_laui: string };
type Page<T> = { items: T[]; pagination: { has_next: boolean; next_page_token: string | null } };

const JS_OPERATOR = `
export function run() { return null; }
export function check_completion() { return { status: 'success' }; }
`;

/**
 * Two tenants on one service (alice and bob, each owning an account tree) and what one may learn of,
 * or do in, the other's: the attacker's findings "link search crosses tenants" and "a task can claim
 * another user's project".
 */
describe('tenant isolation in the catalog: searches, listings and the project/account an item names', function () {
  this.timeout(120_000);
  let svc: TestService;
  let alice: CatalogClient;
  let bob: CatalogClient;
  let bobLaui: string;
  let hers: Tree;
  let his: Tree;
  let herWorkflow: string;
  let hisWorkflow: string;
  let hisOperator: string;
  let hisConnection: string;
  /** Every LAUI of alice's tree bob was not given. */
  const herPrivate = new Set<string>();

  const task = (api: CatalogClient, path: string, json: unknown) => svc.client().post(`/api/v1/task${path}`, { json, token: api.token });
  const taskBody = (name: string, extra: Record<string, unknown> = {}) => ({
    item_type: 'task',
    name,
    parent_laui: hisWorkflow,
    project_laui: his.project_laui,
    account_laui: his.account_laui,
    operator_laui: hisOperator,
    connection_laui: hisConnection,
    ...extra,
  });
  const allLinks = async (api: CatalogClient, filter: Record<string, unknown> = {}): Promise<Link[]> => {
    const links: Link[] = [];
    let token: string | null = null;
    for (;;) {
      const reply = await api.search({ link_filter: filter, pagination: { per_page: 7, ...(token === null ? {} : { page_token: token }) } });
      expect(reply.status, reply.text).to.equal(200);
      const page = reply.json as Page<Link>;
      links.push(...page.items);
      if (!page.pagination.has_next) return links;
      token = page.pagination.next_page_token;
    }
  };

  before(async () => {
    svc = await startTestService({ WORKER_POOL_SIZE: '0' });
    const admin = await svc.login();
    const a = await createUser(svc, admin.token, 'alice');
    const b = await createUser(svc, admin.token, 'bob');
    bobLaui = b.laui;
    alice = catalogClient(svc, a.token);
    bob = catalogClient(svc, b.token);
    hers = await alice.bootstrap('alice-co');
    his = await bob.bootstrap('bob-co');
    herWorkflow = await alice.createOk({ item_type: 'folder.workflow', name: 'wf', parent_laui: hers.folders.workflow });
    hisWorkflow = await bob.createOk({ item_type: 'folder.workflow', name: 'wf', parent_laui: his.folders.workflow });
    hisOperator = await bob.createOk({ item_type: 'operator', name: 'load.operator', parent_laui: his.folders.operator, codeblock: { language: 'javascript', code: JS_OPERATOR } });
    hisConnection = await bob.createOk({ item_type: 'connection', name: 'db', parent_laui: his.folders.connection, content: { host: 'h' } });
    for (const laui of [hers.account_laui, hers.project_laui, herWorkflow, ...Object.values(hers.folders)]) herPrivate.add(laui);
  });
  after(async () => svc?.stop());

  describe('what bob may list of alice\'s', () => {
    let shared: string;
    let secretPayload: string;

    before(async () => {
      // Alice shares one folder with bob and soft-links one of her private payloads into it.
      shared = await alice.createOk({
        item_type: 'folder.payload',
        name: 'shared-with-bob',
        parent_laui: hers.folders.payload,
        access_patch: { add: { viewers: { [bobLaui]: 'true' } } },
      });
      const privateFolder = await alice.createOk({ item_type: 'folder.payload', name: 'private', parent_laui: hers.folders.payload });
      secretPayload = await alice.createOk({ item_type: 'payload', name: 'secret', parent_laui: privateFolder, content: { q: 'select 1' } });
      herPrivate.add(privateFolder).add(secretPayload);
      const linked = await alice.post('/create/link', { parent_laui: shared, child_laui: secretPayload });
      expect(linked.status, linked.text).to.equal(200);
    });

    it('given links between alice\'s items, when bob searches every link (link_filter {}), then he gets only links whose both ends he can VIEW, none naming her items', async () => {
      const bobsLinks = await allLinks(bob);
      expect(bobsLinks.length).to.be.greaterThan(5);
      for (const link of bobsLinks) {
        expect(herPrivate.has(link.parent_laui), `parent ${link.parent_laui}`).to.equal(false);
        expect(herPrivate.has(link.child_laui), `child ${link.child_laui}`).to.equal(false);
      }
      // Alice still sees all of hers, the soft link included.
      const hersLinks = await allLinks(alice);
      expect(hersLinks.some((link) => link.parent_laui === shared && link.child_laui === secretPayload)).to.equal(true);
      expect(hersLinks.some((link) => link.child_laui === herWorkflow)).to.equal(true);
    });

    it('given alice\'s project, when bob searches its links by parent_laui, then none', async () => {
      expect(await allLinks(bob, { parent_laui: hers.project_laui })).to.deep.equal([]);
      expect(await allLinks(bob, { parent_type: 'folder.project' })).to.satisfy((links: Link[]) => links.every((link) => link.parent_laui === his.project_laui));
    });

    it('given a folder alice shares with bob holding a soft link to her private payload, when bob lists its children, then the payload is not listed', async () => {
      const reply = await bob.get({ item_laui: shared, parent_or_child: 'child', per_page: 100 });
      expect(reply.status, reply.text).to.equal(200);
      expect((reply.json as Page<{ laui: string }>).items.map((item) => item.laui)).not.to.include(secretPayload);
      const hersToo = await alice.get({ item_laui: shared, parent_or_child: 'child', per_page: 100 });
      expect((hersToo.json as Page<{ laui: string }>).items.map((item) => item.laui)).to.include(secretPayload);
    });

    it('given the shared folder, when bob lists its ancestors, then none of alice\'s folders above it is listed', async () => {
      const reply = await bob.get({ item_laui: shared, parent_or_child: 'parent', depth: 20 });
      expect(reply.status, reply.text).to.equal(200);
      expect((reply.json as Page<{ laui: string }>).items).to.deep.equal([]);
      const hersToo = await alice.get({ item_laui: shared, parent_or_child: 'parent', depth: 20 });
      expect((hersToo.json as Page<{ laui: string }>).items.map((item) => item.laui)).to.deep.equal([hers.folders.payload, hers.project_laui, hers.account_laui]);
    });

    it('given alice\'s items, when bob searches items by type, then none of hers (what is shared with him excepted)', async () => {
      const reply = await bob.search({ item_filter: { item_type: 'payload' }, pagination: { per_page: 1000 } });
      expect((reply.json as Page<{ laui: string }>).items.map((item) => item.laui)).not.to.include(secretPayload);
    });
  });

  describe('sharing with everyone (000000000000000000000000)', () => {
    const EVERYONE = '000000000000000000000000';

    it('given an item alice shares with everyone as a viewer, when bob searches and lists it, then he sees it; alice\'s other items stay hidden', async () => {
      const folder = await alice.createOk({ item_type: 'folder.payload', name: 'public', parent_laui: hers.folders.payload, access_patch: { add: { viewers: { [EVERYONE]: 'true' } } } });
      const payload = await alice.createOk({ item_type: 'payload', name: 'open', parent_laui: folder, content: {} });
      const found = await bob.search({ item_filter: { item_type: 'payload', parent_laui: folder } });
      expect((found.json as Page<{ laui: string }>).items.map((item) => item.laui)).to.deep.equal([payload]);
      expect((await bob.get({ item_laui: folder, parent_or_child: 'child' })).status).to.equal(200);
      const edit = await bob.post('/update', { item_laui: payload, description: 'bob was here' });
      expect(edit.status).to.equal(403);
      const unshared = await alice.post('/update', { item_laui: folder, access_patch: { remove: { viewers: { [EVERYONE]: 'true' } } } });
      expect(unshared.status, unshared.text).to.equal(200);
      expect((await bob.get({ item_laui: folder, parent_or_child: 'child' })).status).to.equal(403);
    });

    it('given everyone as an owner or editor of an item, or in a group\'s access, when patched, then 422 naming the entry', async () => {
      for (const role of ['owners', 'editors']) {
        const reply = await alice.create({ item_type: 'folder.payload', name: `open-${role}`, parent_laui: hers.folders.payload, access_patch: { add: { [role]: { [EVERYONE]: 'true' } } } });
        expect(reply.status, reply.text).to.equal(422);
        expect((reply.json as { detail: Array<{ loc: unknown[]; msg: string }> }).detail).to.deep.include({
          type: 'value_error',
          loc: ['body', 'access_patch', 'add', role, EVERYONE],
          msg: 'everyone (000000000000000000000000) can only be a viewer',
          input: EVERYONE,
        });
      }
      const group = await svc.client().post('/api/v1/group/create', { json: { name: 'all', access_patch: { add: { viewers: { [EVERYONE]: 'true' } } } }, token: alice.token });
      expect(group.status, group.text).to.equal(422);
    });
  });

  describe('the project and account an item names', () => {
    it('given alice\'s project and account, when bob creates a task in his own workflow naming them (catalog create, validate, task/run), then 403 Access denied and nothing is written', async () => {
      for (const names of [{ project_laui: hers.project_laui, account_laui: hers.account_laui }, { project_laui: hers.project_laui }, { account_laui: hers.account_laui }]) {
        const body = taskBody('nightly_load', names);
        const created = await bob.create(body);
        expect(created.status, created.text).to.equal(403);
        expect(created.json).to.deep.equal({ detail: 'Access denied' });
        expect((await bob.post('/validate', body)).status).to.equal(403);
        const run = await task(bob, '/run', body);
        expect(run.status, run.text).to.equal(403);
        expect(run.json).to.deep.equal({ detail: 'Access denied' });
      }
      const found = await alice.search({ item_filter: { item_type: 'task', name: 'nightly_load' } });
      expect((found.json as Page<unknown>).items).to.deep.equal([]);
    });

    it('given bob\'s refused attempts, when alice creates and runs her own nightly_load, then it is hers: created 200, and task/run finds it (200, the same LAUI)', async () => {
      const operator = await alice.createOk({ item_type: 'operator', name: 'load.operator', parent_laui: hers.folders.operator, codeblock: { language: 'javascript', code: JS_OPERATOR } });
      const connection = await alice.createOk({ item_type: 'connection', name: 'db', parent_laui: hers.folders.connection, content: { host: 'h' } });
      const body = {
        item_type: 'task',
        name: 'nightly_load',
        parent_laui: herWorkflow,
        project_laui: hers.project_laui,
        account_laui: hers.account_laui,
        operator_laui: operator,
        connection_laui: connection,
      };
      const laui = await alice.createOk(body);
      const run = await task(alice, '/run', body);
      expect(run.status, run.text).to.equal(200);
      expect(run.json).to.deep.equal({ item_laui: laui });
    });

    it('given alice\'s project, when bob creates an action (catalog create, action/run) or a payload naming it, then 403', async () => {
      const action = {
        item_type: 'action',
        name: 'grab.action',
        parent_laui: his.folders.action,
        project_laui: hers.project_laui,
        account_laui: his.account_laui,
        codeblock: { language: 'javascript', code: 'export function run() { return 1; }' },
        bashblock: { language: 'bash', code: '' },
      };
      expect((await bob.create(action)).status).to.equal(403);
      const run = await svc.client().post('/api/v1/action/run', { json: action, token: bob.token });
      expect(run.status, run.text).to.equal(403);
      const payload = await bob.create({ item_type: 'payload', name: 'p', parent_laui: his.folders.payload, content: {}, project_laui: hers.project_laui });
      expect(payload.status).to.equal(403);
    });

    it('given bob\'s own task, when he updates it to name alice\'s project or account, then 403 and it is unchanged; other changes and his own project are fine', async () => {
      const laui = await bob.createOk(taskBody('his_task'));
      for (const change of [{ project_laui: hers.project_laui }, { account_laui: hers.account_laui }]) {
        const reply = await bob.post('/update', { item_laui: laui, ...change });
        expect(reply.status, reply.text).to.equal(403);
        expect(reply.json).to.deep.equal({ detail: 'Access denied' });
      }
      const item = (await bob.get({ item_laui: laui })).json as Record<string, unknown>;
      expect(item).to.include({ project_laui: his.project_laui, account_laui: his.account_laui });
      expect((await bob.post('/update', { item_laui: laui, description: 'mine', project_laui: his.project_laui })).status).to.equal(200);
    });

    it('given a task in alice\'s project she lets bob edit (but not see the project), when bob changes its description, then 200: only a changed project or account is checked', async () => {
      const operator = await alice.createOk({ item_type: 'operator', name: 'edit.operator', parent_laui: hers.folders.operator, codeblock: { language: 'javascript', code: JS_OPERATOR } });
      const connection = await alice.createOk({ item_type: 'connection', name: 'db2', parent_laui: hers.folders.connection, content: { host: 'h' } });
      const laui = await alice.createOk({
        item_type: 'task',
        name: 'shared_task',
        parent_laui: herWorkflow,
        project_laui: hers.project_laui,
        account_laui: hers.account_laui,
        operator_laui: operator,
        connection_laui: connection,
        access_patch: { add: { editors: { [bobLaui]: 'true' } } },
      });
      for (const item of [operator, connection]) {
        const shared = await alice.post('/update', { item_laui: item, access_patch: { add: { viewers: { [bobLaui]: 'true' } } } });
        expect(shared.status, shared.text).to.equal(200);
      }
      const reply = await bob.post('/update', { item_laui: laui, description: 'edited by bob' });
      expect(reply.status, reply.text).to.equal(200);
    });
  });
});
