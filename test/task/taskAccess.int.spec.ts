import { expect } from 'chai';
import { startTestService, type TestService } from '../support/testService.ts';
import { taskBed, type TaskBed } from '../support/taskBed.ts';
import { catalogClient, createUser, waitForItem, type CatalogClient } from '../support/catalogFixture.ts';
import { EXECUTE_TASK } from '../../command-side/task/taskDeps.ts';
import type { ExecuteTaskMessage } from '../../command-side/task/dispatchConnection.ts';
import type { Consumer } from '../../shared/bus/MessageBus.ts';

/** The attack of issue 19: an operator that prints the connection's password. */
const JS_LEAK = `
export function run(connection) { return null; }
export function check_completion(connection) { return { status: 'success', leaked: connection.password ?? null, host: connection.host ?? null }; }
`;

/** Holds its connection's only slot until it is cancelled. */
const JS_BLOCK = `
export function run() { return null; }
export function check_completion() { return { status: 'running' }; }
`;

const PY_ECHO = `
def run(connection, action_variables, context):
    return {"connection": connection}
`;

const SECRET = 'pw-of-the-warehouse';

type Task = Record<string, unknown> & { state: string; last_run_output: Record<string, unknown> };

/**
 * Issue 19, "Access checks on every task route", over HTTP with two users: the administrator owns
 * the account whose connections hold credentials; mallory owns her own account and tries to use
 * them; eve has no right on anything.
 */
describe('task access checks (issue 19): every task route, references, worker tokens, masking', function () {
  this.timeout(120_000);
  let svc: TestService;
  let admin: CatalogClient;
  let bed: TaskBed;
  let adminOperator: string;
  let blocker: string;
  let mallory: { laui: string; token: string };
  let eve: { laui: string; token: string };
  let her: CatalogClient;
  let hers: Awaited<ReturnType<CatalogClient['bootstrap']>>;
  let herWorkflow: string;
  let herOperator: string;
  let herAction: string;
  let spy: Consumer;
  const dispatched: ExecuteTaskMessage[] = [];

  const task = (token: string, path: string, json?: unknown) =>
    svc.client().post(`/api/v1/task${path}`, json === undefined ? { token } : { json, token });
  const waitFor = (laui: string, done: (item: Task) => boolean) => waitForItem<Task>(admin, laui, done, 40_000);
  const connectionNamed = (name: string, content: Record<string, unknown> = { host: 'db.example', user: 'etl', password: SECRET }) =>
    admin.createOk({ item_type: 'connection', name, parent_laui: bed.tree.folders.connection, content, max_parallelism: 1 });
  const share = async (laui: string, who: string, role: 'viewers' | 'editors' = 'viewers') => {
    const reply = await admin.post('/update', { item_laui: laui, access_patch: { add: { [role]: { [who]: 'true' } } } });
    expect(reply.status, reply.text).to.equal(200);
  };
  const revoke = async (laui: string, who: string, role: 'viewers' | 'editors' = 'viewers') => {
    const reply = await admin.post('/update', { item_laui: laui, access_patch: { remove: { [role]: { [who]: 'true' } } } });
    expect(reply.status, reply.text).to.equal(200);
  };
  /** A create-and-run body for a task in mallory's own project. */
  const herTask = (name: string, connection: string, extra: Record<string, unknown> = {}) => ({
    item_type: 'task',
    name,
    parent_laui: herWorkflow,
    project_laui: hers.project_laui,
    account_laui: hers.account_laui,
    operator_laui: herOperator,
    connection_laui: connection,
    ...extra,
  });
  const tasksNamed = async (name: string) =>
    ((await admin.search({ item_filter: { item_type: 'task', name } })).json as { items: unknown[] }).items;
  const adminRun = async (name: string, connection: string, operator = adminOperator) => {
    const reply = await task(admin.token, '/run', { item_type: 'task', ...bed.taskBody(name, operator, { connection_laui: connection }) });
    expect(reply.status, reply.text).to.equal(200);
    return (reply.json as { item_laui: string }).item_laui;
  };

  before(async () => {
    svc = await startTestService({ WORKER_POLL_INTERVAL_MS: '50' });
    admin = catalogClient(svc, (await svc.login()).token);
    bed = await taskBed(admin, 'access-co', { name: 'main', content: { host: 'db.example', password: SECRET }, max_parallelism: 2 });
    adminOperator = await admin.createOk({ item_type: 'operator', name: 'leak.operator', parent_laui: bed.tree.folders.operator, codeblock: { language: 'javascript', content: JS_LEAK } });
    blocker = await admin.createOk({ item_type: 'operator', name: 'block.operator', parent_laui: bed.tree.folders.operator, codeblock: { language: 'javascript', content: JS_BLOCK } });
    mallory = await createUser(svc, admin.token, 'mallory');
    eve = await createUser(svc, admin.token, 'eve');
    her = catalogClient(svc, mallory.token);
    hers = await her.bootstrap('mallory-co');
    herWorkflow = await her.createOk({ item_type: 'folder.workflow', name: 'hers', parent_laui: hers.folders.workflow });
    herOperator = await her.createOk({ item_type: 'operator', name: 'leak.operator', parent_laui: hers.folders.operator, codeblock: { language: 'javascript', content: JS_LEAK } });
    herAction = await her.createOk({
      item_type: 'action',
      name: 'mine.action',
      parent_laui: hers.folders.action,
      project_laui: hers.project_laui,
      account_laui: hers.account_laui,
      codeblock: { language: 'python', code: PY_ECHO },
    });
    spy = await svc.service.bus.subscribe<ExecuteTaskMessage>({ topic: EXECUTE_TASK, group: 'access-spec-spy', handler: async (message) => void dispatched.push(message.value) });
  });
  after(async () => {
    await spy.close();
    await svc.stop();
  });

  describe('POST /task/run and /task/multiple_tasks: VIEW on every referenced item, checked at every run', () => {
    it('given a connection she cannot VIEW, when she creates and runs a task with it in her own project, then 403 and no task is left; with VIEW, 200', async () => {
      const connection = await connectionNamed('run-create');
      const refused = await task(mallory.token, '/run', herTask('steal', connection));
      expect(refused.status, refused.text).to.equal(403);
      expect(refused.json).to.deep.equal({ detail: 'Access denied' });
      expect(await tasksNamed('steal')).to.deep.equal([]);

      await share(connection, mallory.laui);
      const allowed = await task(mallory.token, '/run', herTask('steal', connection));
      expect(allowed.status, allowed.text).to.equal(200);
      const done = await waitFor((allowed.json as { item_laui: string }).item_laui, (item) => item.state === 'success');
      expect(done.last_run_output.host).to.equal('db.example');
    });

    it('given her task whose connection VIEW was revoked, when she runs it again (run or multiple_tasks), then 403; granted again, 200', async () => {
      const connection = await connectionNamed('run-revoked');
      await share(connection, mallory.laui);
      const created = await task(mallory.token, '/run', herTask('revoked', connection));
      expect(created.status, created.text).to.equal(200);
      const laui = (created.json as { item_laui: string }).item_laui;
      await waitFor(laui, (item) => item.state === 'success');

      await revoke(connection, mallory.laui);
      const again = await task(mallory.token, '/run', { item_type: 'task', item_laui: laui });
      expect(again.status, again.text).to.equal(403);
      const many = await task(mallory.token, '/multiple_tasks', { task_lauis: [laui] });
      expect(many.status, many.text).to.equal(403);
      expect((await admin.get({ item_laui: laui })).json).to.include({ state: 'success' });

      await share(connection, mallory.laui);
      const rerun = await task(mallory.token, '/multiple_tasks', { task_lauis: [laui] });
      expect(rerun.status, rerun.text).to.equal(200);
      expect((rerun.json as { task_results: Array<{ task_laui: string }> }).task_results.map((result) => result.task_laui)).to.deep.equal([laui]);
    });

    it('given an operator, payload, attached config or action (or an action reference\'s connection) she cannot VIEW, when she runs a task naming it, then 403', async () => {
      const connection = await connectionNamed('run-refs');
      await share(connection, mallory.laui);
      const payload = await admin.createOk({ item_type: 'payload', name: 'hidden-payload', parent_laui: bed.tree.folders.payload, content: { q: 1 } });
      const config = await admin.createOk({ item_type: 'config', name: 'hidden-config', parent_laui: bed.tree.folders.config, config_type: 'task', content: {} });
      const action = await admin.createOk({
        item_type: 'action',
        name: 'hidden.action',
        parent_laui: bed.tree.folders.action,
        project_laui: bed.tree.project_laui,
        account_laui: bed.tree.account_laui,
        codeblock: { language: 'python', code: PY_ECHO },
      });
      const hidden = await connectionNamed('run-refs-hidden');
      const bodies: Array<[string, Record<string, unknown>]> = [
        ['operator', { operator_laui: adminOperator }],
        ['payload', { payload_laui: payload }],
        ['config', { attached_config_lauis: [config] }],
        ['action', { actions: { pre_actions: [{ laui: action, action_variables: {} }] } }],
        ['action connection', { actions: { pre_actions: [{ laui: herAction, connection_laui: hidden, action_variables: {} }] } }],
      ];
      for (const [what, extra] of bodies) {
        const reply = await task(mallory.token, '/run', herTask(`refs-${what}`, connection, extra));
        expect(reply.status, `${what}: ${reply.text}`).to.equal(403);
      }
      const fine = await task(mallory.token, '/run', herTask('refs-fine', connection, { actions: { pre_actions: [{ laui: herAction, action_variables: {} }] } }));
      expect(fine.status, fine.text).to.equal(200);
    });
  });

  describe('POST /catalog/create and /catalog/update of a task: VIEW on every referenced item', () => {
    it('given a connection she cannot VIEW, when she creates a task naming it or changes her task to it, then 403; with VIEW, 200', async () => {
      const visible = await connectionNamed('catalog-visible');
      const hidden = await connectionNamed('catalog-hidden');
      await share(visible, mallory.laui);
      const { item_type: _type, ...fields } = herTask('catalog-task', hidden);
      const refused = await her.create({ item_type: 'task', ...fields });
      expect(refused.status, refused.text).to.equal(403);
      const validated = await her.post('/validate', { item_type: 'task', ...fields });
      expect(validated.status, validated.text).to.equal(403);

      const laui = await her.createOk({ item_type: 'task', ...fields, connection_laui: visible });
      const moved = await her.post('/update', { item_laui: laui, connection_laui: hidden });
      expect(moved.status, moved.text).to.equal(403);
      const hook = await her.post('/update', { item_laui: laui, actions: { post_actions: [{ laui: herAction, connection_laui: hidden, action_variables: {} }] } });
      expect(hook.status, hook.text).to.equal(403);

      await share(hidden, mallory.laui);
      const allowed = await her.post('/update', { item_laui: laui, connection_laui: hidden });
      expect(allowed.status, allowed.text).to.equal(200);
    });
  });

  describe('POST /task/update, /task/finish, /task/dangerously_reset: EDIT on the task', () => {
    it('given a user without EDIT on the task (none, or VIEW only), when she updates, finishes or resets it, then 403 and nothing changes; its owner gets 200', async () => {
      const connection = await connectionNamed('edit-routes');
      const laui = await adminRun('edit-routes-task', connection, blocker);
      await waitFor(laui, (item) => item.state === 'running');
      await share(laui, mallory.laui);
      for (const token of [eve.token, mallory.token]) {
        for (const body of [{ payload: { evil: true } }, { config: { parameters: { x: 1 } } }, { last_run_output: { forged: true } }, { state: 'success' }]) {
          const reply = await task(token, `/update/${laui}`, body);
          expect(reply.status, reply.text).to.equal(403);
          expect(reply.json).to.deep.equal({ detail: 'Access denied' });
        }
        expect((await task(token, `/finish/${laui}`)).status).to.equal(403);
        expect((await task(token, `/dangerously_reset/${laui}`)).status).to.equal(403);
      }
      const unchanged = (await admin.get({ item_laui: laui })).json as Task;
      expect(unchanged.state).to.equal('running');
      expect(unchanged.payload ?? null).to.equal(null);

      const update = await task(admin.token, `/update/${laui}`, { user_set_state: 'cancel' });
      expect(update.status, update.text).to.equal(200);
      await waitFor(laui, (item) => item.state === 'cancelled');
      const reset = await task(admin.token, `/dangerously_reset/${laui}`);
      expect(reset.status, reset.text).to.equal(200);

      // finish needs the task in its queue: a waiting one (the slot is held by a blocker).
      const holder = await adminRun('edit-routes-holder', connection, blocker);
      await waitFor(holder, (item) => item.state === 'running');
      const waiting = await adminRun('edit-routes-waiting', connection);
      expect((await task(eve.token, `/finish/${waiting}`)).status).to.equal(403);
      const finish = await task(admin.token, `/finish/${waiting}`);
      expect(finish.status, finish.text).to.equal(200);
      await task(admin.token, `/update/${holder}`, { user_set_state: 'cancel' });
      await waitFor(holder, (item) => item.state === 'cancelled');
    });
  });

  describe('dispatch tokens: a worker\'s token may act on its own task only', () => {
    it('given the access_token of a dispatched task, when used, then update and finish of that task are allowed and every other route is 403', async () => {
      const connection = await connectionNamed('worker-token');
      const own = await adminRun('worker-token-own', connection, blocker);
      const other = await adminRun('worker-token-other', connection);
      await waitFor(own, (item) => item.state === 'running');
      const deadline = Date.now() + 20_000;
      while (!dispatched.some((message) => message.task_laui === own) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      const token = dispatched.find((message) => message.task_laui === own)?.access_token ?? '';
      expect(token).to.not.equal('');

      const heartbeat = await task(token, `/update/${own}`, { latest_heartbeat: new Date().toISOString() });
      expect(heartbeat.status, heartbeat.text).to.equal(200);
      expect((await task(token, `/update/${other}`, { state: 'success' })).status).to.equal(403);
      expect((await task(token, `/finish/${other}`)).status).to.equal(403);
      expect((await task(token, `/dangerously_reset/${own}`)).status).to.equal(403);
      expect((await task(token, '/run', { item_type: 'task', item_laui: other })).status).to.equal(403);
      expect((await svc.client().get(`/api/v1/catalog/get?item_laui=${own}`, { token })).status).to.equal(403);
      expect((await svc.client().post('/api/v1/catalog/update', { json: { item_laui: connection, max_parallelism: 5 }, token })).status).to.equal(403);

      const cancelled = await task(token, `/update/${own}`, { user_set_state: 'cancel' });
      expect(cancelled.status, cancelled.text).to.equal(200);
      await waitFor(own, (item) => item.state === 'cancelled');
      await waitFor(other, (item) => item.state === 'success');
    });
  });

  describe('the worker: connection content reaches only code run on behalf of a user with VIEW on it', () => {
    it('given her run waiting for its slot, when her VIEW on the connection is revoked before it starts, then it ends fail saying why and the operator never gets the password', async () => {
      const connection = await connectionNamed('worker-revoked');
      await share(connection, mallory.laui);
      const holder = await adminRun('worker-revoked-holder', connection, blocker);
      await waitFor(holder, (item) => item.state === 'running');
      const queued = await task(mallory.token, '/run', herTask('worker-revoked', connection));
      expect(queued.status, queued.text).to.equal(200);
      const laui = (queued.json as { item_laui: string }).item_laui;
      expect(((await admin.get({ item_laui: laui })).json as Task).state).to.equal('queued_for_connection');

      await revoke(connection, mallory.laui);
      await task(admin.token, `/update/${holder}`, { user_set_state: 'cancel' });
      const ended = await waitFor(laui, (item) => ['success', 'error', 'timeout', 'cancelled', 'fail'].includes(item.state));
      expect(ended.state).to.equal('fail');
      expect(String(ended.last_run_output.error)).to.match(/^Access denied: user mallory cannot VIEW .*\b/);
      expect(String(ended.last_run_output.error)).to.include(connection);
      expect(JSON.stringify(ended)).to.not.include(SECRET);
    });
  });

  describe('POST /action/run: VIEW on the connection passed', () => {
    it('given her own action and a connection she cannot VIEW, when run with it, then 403; with VIEW, 200 and the action gets the content', async () => {
      const connection = await connectionNamed('action-run');
      const run = () => svc.client().post('/api/v1/action/run', { json: { item_type: 'action', item_laui: herAction, connection_laui: connection }, token: mallory.token });
      const refused = await run();
      expect(refused.status, refused.text).to.equal(403);
      await share(connection, mallory.laui);
      const allowed = await run();
      expect(allowed.status, allowed.text).to.equal(200);
      expect((allowed.json as { result: { connection: Record<string, unknown> } }).result.connection).to.include({ host: 'db.example' });
    });
  });

  describe('masking: readers see a connection\'s non-secret fields', () => {
    it('given a connection with ordinary and secret-bearing fields (nested too), when a reader with VIEW reads it, then only the secret-bearing values are masked; a caller without VIEW sees every value masked', async () => {
      const laui = await connectionNamed('masked', {
        host: 'db.example',
        port: 5432,
        database: 'sales',
        user: 'etl',
        region: 'eu-west-1',
        password: SECRET,
        api_key: 'ak-123',
        options: { sslmode: 'require', client_secret: 'cs-456' },
        dsn: `postgres://etl:${SECRET}@db.example:5432/sales`,
      });
      await share(laui, mallory.laui);
      const read = await her.get({ item_laui: laui });
      expect(read.status, read.text).to.equal(200);
      expect((read.json as { content: unknown }).content).to.deep.equal({
        host: 'db.example',
        port: 5432,
        database: 'sales',
        user: 'etl',
        region: 'eu-west-1',
        password: '********',
        api_key: '********',
        options: { sslmode: 'require', client_secret: '********' },
        dsn: 'postgres://etl:********@db.example:5432/sales',
      });
      expect(read.text).to.not.include(SECRET);
      const revision = await her.getPath(`/get/item_revisions?item_laui=${laui}&version=1`);
      expect((revision.json as { content: Record<string, unknown> }).content).to.include({ host: 'db.example', password: '********' });

      // Without VIEW (the routes the spec leaves unchecked) a caller learns the shape only, as before.
      const stranger = catalogClient(svc, eve.token);
      const allMasked = Object.fromEntries(['host', 'port', 'database', 'user', 'region', 'password', 'api_key', 'options', 'dsn'].map((key) => [key, '********']));
      for (const reply of [await stranger.get({ item_laui: laui }), await stranger.getPath(`/get/item_revisions?item_laui=${laui}&version=1`)]) {
        expect(reply.status, reply.text).to.equal(200);
        expect((reply.json as { content: unknown }).content).to.deep.equal(allMasked);
      }
    });
  });
});
