import { expect } from 'chai';
import { startTestService, type TestService } from '../support/testService.ts';
import { taskBed, type TaskBed } from '../support/taskBed.ts';
import { catalogClient, waitForItem, type CatalogClient } from '../support/catalogFixture.ts';

/**
 * A task's history as the auditor reads it (GET /api/v1/events?stream=item-<laui>, and the item
 * history): one named event per transition of the state table, never a field diff.
 */
const QUICK = `
export function run() { return null; }
export function check_completion() { return { status: 'success' }; }
`;
const FAILING = `
export function run() { return null; }
export function check_completion() { return { status: 'failed', why: 'upstream file missing' }; }
`;
const NEVER_DONE = `
export function run() { return null; }
export function check_completion() { return { status: 'running' }; }
`;
const GATE_CLOSED = 'export function run() { return false; }\n';
const TERMINAL = ['success', 'error', 'timeout', 'cancelled', 'fail'];

type Task = Record<string, unknown> & { state: string };
interface Envelope {
  type: string;
  version: number;
  data: Record<string, unknown>;
}

describe('task history as named events: success, error with retry, timeout, cancel, fail, reset, skipped', function () {
  this.timeout(90_000);
  let svc: TestService;
  let admin: CatalogClient;
  let bed: TaskBed;
  const operators: Record<string, string> = {};
  let gate: string;

  const post = (path: string, json?: unknown) => svc.client().post(`/api/v1/task${path}`, json === undefined ? { token: admin.token } : { json, token: admin.token });
  const waitFor = (laui: string, done: (task: Task) => boolean) => waitForItem<Task>(admin, laui, done, 30_000);
  const runNew = async (name: string, operator: string, extra: Record<string, unknown> = {}) => {
    const reply = await post('/run', bed.taskBody(name, operator, extra));
    expect(reply.status, reply.text).to.equal(200);
    return (reply.json as { item_laui: string }).item_laui;
  };
  /** The task's lifecycle events, as served to auditors (catalog creation and field edits left out). */
  const lifecycle = async (laui: string): Promise<Envelope[]> => {
    const reply = await svc.client().get(`/api/v1/events?stream=item-${laui}&limit=1000`, { token: admin.token });
    expect(reply.status, reply.text).to.equal(200);
    return (reply.json as { events: Envelope[] }).events.filter((event) => event.type.startsWith('Task'));
  };
  const types = async (laui: string) => (await lifecycle(laui)).map((event) => event.type);
  const RUN = ['TaskQueued', 'TaskDispatched', 'TaskStarted'];

  before(async () => {
    svc = await startTestService();
    admin = catalogClient(svc, (await svc.login()).token);
    bed = await taskBed(admin, 'named-co', { name: 'c', content: {}, max_parallelism: 2 });
    const { tree } = bed;
    for (const [name, code] of Object.entries({ quick: QUICK, failing: FAILING, never: NEVER_DONE })) {
      operators[name] = await admin.createOk({ item_type: 'operator', name: `${name}.operator`, parent_laui: tree.folders.operator, codeblock: { language: 'javascript', code } });
    }
    operators.empty = await admin.createOk({ item_type: 'operator', name: 'empty.operator', parent_laui: tree.folders.operator });
    gate = await admin.createOk({
      item_type: 'action',
      name: 'gate.action',
      parent_laui: tree.folders.action,
      project_laui: tree.project_laui,
      account_laui: tree.account_laui,
      codeblock: { language: 'javascript', code: GATE_CLOSED },
    });
    await admin.createOk({
      item_type: 'config',
      name: 'system',
      parent_laui: tree.folders.config,
      config_type: 'system',
      content: { check_completion_timeout_seconds: 2 },
    });
  });
  after(async () => svc.stop());

  it('given a run that succeeds, when its history is read, then queued, dispatched (with its execution and session ids), started, succeeded, each with from and to', async () => {
    const laui = await runNew('ok', operators.quick!);
    const done = await waitFor(laui, (task) => task.state === 'success');
    const events = await lifecycle(laui);
    expect(events.map((event) => event.type)).to.deep.equal([...RUN, 'TaskSucceeded']);
    expect(events.map((event) => [event.data.from, event.data.to])).to.deep.equal([
      ['scheduled', 'queued_for_connection'],
      ['queued_for_connection', 'queued_in_redis'],
      ['queued_in_redis', 'running'],
      ['running', 'success'],
    ]);
    const dispatched = events[1]!.data;
    expect(dispatched.session_id).to.be.a('string').and.equal(done.last_run_session_id);
    expect(dispatched.execution_id).to.be.a('string').and.equal(done.task_instance);
    expect(events.every((event) => event.version === 1)).to.equal(true);
    // The item history names them too.
    const history = await svc.client().get(`/api/v1/catalog/get/item_history?item_laui=${laui}`, { token: admin.token });
    expect((history.json as Array<{ event: string }>).map((entry) => entry.event)).to.include.members([...RUN, 'TaskSucceeded']);
  });

  it('given a failing run with retries, when it errors and is run again, then TaskErrored each time with its retry number', async () => {
    const laui = await runNew('retrying', operators.failing!, { total_retries: 3, retry_interval: 0 });
    await waitFor(laui, (task) => task.state === 'error' && task.retry_number === 1);
    expect((await post('/run', { item_laui: laui })).status).to.equal(200);
    await waitFor(laui, (task) => task.state === 'error' && task.retry_number === 2);
    const events = await lifecycle(laui);
    expect(events.map((event) => event.type)).to.deep.equal([...RUN, 'TaskErrored', ...RUN, 'TaskErrored']);
    expect(events.filter((event) => event.type === 'TaskErrored').map((event) => (event.data.changes as { retry_number: number }).retry_number)).to.deep.equal([1, 2]);
  });

  it('given check_completion that never finishes, when the completion timeout passes, then TaskTimedOut', async () => {
    const laui = await runNew('slow', operators.never!);
    await waitFor(laui, (task) => task.state === 'timeout');
    expect(await types(laui)).to.deep.equal([...RUN, 'TaskTimedOut']);
  });

  it('given a running task, when cancelled, then TaskCancellationRequested, then TaskCancelled', async () => {
    const laui = await runNew('to-cancel', operators.never!);
    await waitFor(laui, (task) => task.state === 'running');
    expect((await post(`/update/${laui}`, { user_set_state: 'cancel' })).status).to.equal(200);
    await waitFor(laui, (task) => TERMINAL.includes(task.state));
    expect(await types(laui)).to.deep.equal([...RUN, 'TaskCancellationRequested', 'TaskCancelled']);
  });

  it('given an operator without code, when run, then TaskFailed', async () => {
    const laui = await runNew('no-code', operators.empty!);
    await waitFor(laui, (task) => TERMINAL.includes(task.state));
    expect(await types(laui)).to.deep.equal([...RUN, 'TaskFailed']);
  });

  it('given a finished task, when dangerously reset, then TaskReset with its trigger', async () => {
    const laui = await runNew('reset-me', operators.quick!);
    await waitFor(laui, (task) => task.state === 'success');
    expect((await post(`/dangerously_reset/${laui}`)).status).to.equal(200);
    const events = await lifecycle(laui);
    expect(events.map((event) => event.type)).to.deep.equal([...RUN, 'TaskSucceeded', 'TaskReset']);
    expect(events.at(-1)?.data).to.deep.include({ from: 'success', to: 'scheduled', trigger: 'dangerously_reset' });
  });

  it('given a pre-action that returns false, when run, then TaskSkipped and nothing queued', async () => {
    const laui = await runNew('gated', operators.quick!, { actions: { create_actions: [], pre_actions: [{ laui: gate, action_variables: {} }], running_actions: [], post_actions: [] } });
    await waitFor(laui, (task) => ((task.actions_status as { pre_actions?: unknown[] }).pre_actions?.length ?? 0) > 0);
    expect(await types(laui)).to.deep.equal(['TaskSkipped']);
  });

  it('given a catalog edit of a task, when read, then it stays an ItemUpdated (version 2), not a lifecycle event', async () => {
    const laui = await runNew('edited', operators.quick!);
    await waitFor(laui, (task) => task.state === 'success');
    expect((await admin.post('/update', { item_laui: laui, description: 'now documented' })).status).to.equal(200);
    const reply = await svc.client().get(`/api/v1/events?stream=item-${laui}&type=ItemUpdated`, { token: admin.token });
    const edits = (reply.json as { events: Envelope[] }).events;
    expect(edits.map((event) => [event.type, event.version])).to.deep.include(['ItemUpdated', 2]);
    expect(edits.every((event) => !('state' in (event.data.changes as object)))).to.equal(true);
  });
});
