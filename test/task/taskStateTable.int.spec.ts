import { expect } from 'chai';
import { startTestService, type TestService } from '../support/testService.ts';
import { taskBed, type TaskBed } from '../support/taskBed.ts';
import { catalogClient, waitForItem, type CatalogClient } from '../support/catalogFixture.ts';
import type { Reply } from '../support/HttpClient.ts';

/** Runs until cancelled, unless its payload says done. */
const JS_UNTIL_CANCELLED = `
export function run() { return null; }
export function check_completion(connection, payload) { return payload && payload.done ? { status: 'success' } : { status: 'running' }; }
`;

type Task = Record<string, unknown> & { state: string };

/**
 * Issue 19: the 3.1 state table is what the API enforces. A cancelled task re-run with POST /task/run
 * went back to running; it now runs again only after dangerously_reset. A refused transition is 409
 * (spec 7: the request conflicts with the task's current state, as START on a running cron).
 */
describe('task state table enforced by the API (HTTP, embedded service)', function () {
  this.timeout(90_000);
  let svc: TestService;
  let admin: CatalogClient;
  let bed: TaskBed;
  let operator: string;

  const post = (path: string, json?: unknown) => svc.client().post(`/api/v1/task${path}`, json === undefined ? { token: admin.token } : { json, token: admin.token });
  const waitFor = (laui: string, done: (task: Task) => boolean) => waitForItem<Task>(admin, laui, done, 30_000);
  const item = async (laui: string) => (await admin.get({ item_laui: laui })).json as Task;
  const detail = (reply: Reply) => String((reply.json as { detail: unknown }).detail);
  /** A task made directly in a state through the catalog (creation is not a transition). */
  const taskIn = (name: string, state: string, extra: Record<string, unknown> = {}) =>
    admin.createOk({ item_type: 'task', ...bed.taskBody(name, operator), state, ...extra });

  before(async () => {
    svc = await startTestService();
    admin = catalogClient(svc, (await svc.login()).token);
    bed = await taskBed(admin, 'table-co', { name: 'c', content: {}, max_parallelism: 2 });
    operator = await admin.createOk({ item_type: 'operator', name: 'until.operator', parent_laui: bed.tree.folders.operator, codeblock: { language: 'javascript', code: JS_UNTIL_CANCELLED } });
  });
  after(async () => svc.stop());

  it('given a task cancelled by its user, when run again, then 409 and it stays cancelled; after dangerously_reset it runs', async () => {
    const started = await post('/run', bed.taskBody('cancel-me', operator));
    expect(started.status, started.text).to.equal(200);
    const laui = (started.json as { item_laui: string }).item_laui;
    await waitFor(laui, (task) => task.state === 'running');
    expect((await post(`/update/${laui}`, { user_set_state: 'cancel' })).status).to.equal(200);
    await waitFor(laui, (task) => task.state === 'cancelled');

    const again = await post('/run', { item_laui: laui });
    expect(again.status, again.text).to.equal(409);
    expect(detail(again)).to.include('cancelled -> queued_for_connection').and.include('dangerously_reset');
    const many = await post('/multiple_tasks', { task_lauis: [laui] });
    expect(many.status, many.text).to.equal(409);
    expect(detail(many)).to.include('dangerously_reset');
    const history = (await admin.getPath(`/get/item_history?item_laui=${laui}`)).json as Array<{ changes?: { state?: string } }>;
    expect(history.map((entry) => entry.changes?.state).filter(Boolean).at(-1)).to.equal('cancelled');
    expect((await item(laui)).state).to.equal('cancelled');

    expect((await post(`/dangerously_reset/${laui}`)).status).to.equal(200);
    expect((await item(laui)).state).to.equal('scheduled');
    expect((await post(`/update/${laui}`, { payload: { done: true } })).status).to.equal(200);
    const rerun = await post('/run', { item_laui: laui });
    expect(rerun.status, rerun.text).to.equal(200);
    await waitFor(laui, (task) => task.state === 'success');
  });

  it('given POST /task/update with a state, when the table refuses the transition, then 409 naming it and nothing changes; allowed rows pass', async () => {
    const scheduled = await taskIn('upd-scheduled', 'scheduled');
    for (const to of ['running', 'success', 'error', 'cancelled', 'queued_in_redis']) {
      const reply = await post(`/update/${scheduled}`, { state: to, duration: 5 });
      expect(reply.status, `scheduled -> ${to}: ${reply.text}`).to.equal(409);
      expect(detail(reply)).to.include(`scheduled -> ${to}`);
    }
    expect(await item(scheduled)).to.include({ state: 'scheduled' });
    expect((await item(scheduled)).duration ?? null).to.equal(null);

    const cancelled = await taskIn('upd-cancelled', 'cancelled', { user_set_state: 'cancel' });
    for (const to of ['scheduled', 'queued_for_connection', 'running']) {
      expect((await post(`/update/${cancelled}`, { state: to })).status, `cancelled -> ${to}`).to.equal(409);
    }

    const running = await taskIn('upd-running', 'running');
    expect((await post(`/update/${running}`, { state: 'error', retry_number: 1 })).status).to.equal(200);
    expect(await item(running)).to.include({ state: 'error', retry_number: 1 });
    // The same state again is no transition; other fields and user_set_state change freely.
    expect((await post(`/update/${running}`, { state: 'error', user_set_state: 'cancel' })).status).to.equal(200);
  });

  it('given POST /catalog/update of a task state, when the table refuses it, then 409 as well', async () => {
    const cancelled = await taskIn('cat-cancelled', 'cancelled');
    const reply = await admin.post('/update', { item_laui: cancelled, state: 'scheduled' });
    expect(reply.status, reply.text).to.equal(409);
    expect(detail(reply)).to.include('cancelled -> scheduled');
    expect((await item(cancelled)).state).to.equal('cancelled');
  });
});
