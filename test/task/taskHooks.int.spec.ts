import { expect } from 'chai';
import { startTestService, type TestService } from '../support/testService.ts';
import { taskBed, type TaskBed } from '../support/taskBed.ts';
import { catalogClient, waitForItem, type CatalogClient } from '../support/catalogFixture.ts';

const OP = `
export function run() { return null; }
export function check_completion(connection, payload, context) { return { status: 'success' }; }
`;
const action = (returns: string) => `def run(connection, action_variables, context):\n    ${returns}\n`;

type Task = Record<string, unknown> & { state: string; actions_status: Record<string, Array<Record<string, unknown>>> };

describe('task hooks: create, pre, running and post actions (HTTP, real processes)', function () {
  this.timeout(60_000);
  let svc: TestService;
  let admin: CatalogClient;
  let tree: Awaited<ReturnType<CatalogClient['bootstrap']>>;
  let workflow: string;
  let connection: string;
  let operator: string;
  let bed: TaskBed;
  const actions: Record<string, string> = {};

  const run = (name: string, hooks: Record<string, unknown[]>) =>
    svc.client().post('/api/v1/task/run', {
      json: bed.taskBody(name, operator, { actions: { create_actions: [], pre_actions: [], running_actions: [], post_actions: [], ...hooks } }),
      token: admin.token,
    });
  const ref = (name: string, extra: Record<string, unknown> = {}) => ({ laui: actions[name], action_variables: {}, ...extra });

  before(async () => {
    // One SLA minute lasts 400 ms here, so SLA behaviour is observable in a test.
    svc = await startTestService({ SLA_MINUTE_MS: '400' });
    admin = catalogClient(svc, (await svc.login()).token);
    bed = await taskBed(admin, 'hooks-co', { name: 'c', content: {}, max_parallelism: 2 });
    ({ tree, workflow, connection } = bed);
    operator = await admin.createOk({ item_type: 'operator', name: 'op.operator', parent_laui: tree.folders.operator, codeblock: { language: 'javascript', code: OP } });
    for (const [name, body] of Object.entries({ yes: 'return True', no: 'return False', boom: 'raise RuntimeError("post exploded")' })) {
      actions[name] = await admin.createOk({
        item_type: 'action',
        name: `${name}.action`,
        parent_laui: tree.folders.action,
        project_laui: tree.project_laui,
        account_laui: tree.account_laui,
        codeblock: { language: 'python', content: action(body) },
        bashblock: { language: 'bash', content: '' },
      });
    }
  });
  after(async () => svc.stop());

  it('given a create action returning false, when the task is created, then 422 {task_name, message} and nothing is created', async () => {
    const reply = await run('never-created', { create_actions: [ref('yes'), ref('no')] });
    expect(reply.status).to.equal(422);
    const detail = (reply.json as { detail: { task_name: string; message: string } }).detail;
    expect(detail.task_name).to.equal('never-created');
    expect(detail.message).to.include('returned false');
    const found = (await admin.search({ item_filter: { item_type: 'task', name: 'never-created' } })).json as { items: unknown[] };
    expect(found.items).to.have.length(0);
  });

  it('given a pre action returning false, when run, then the task is not queued and actions_status says why', async () => {
    const reply = await run('skipped', { pre_actions: [ref('no'), ref('yes')] });
    expect(reply.status).to.equal(200);
    const laui = (reply.json as { item_laui: string }).item_laui;
    const task = await waitForItem<Task>(admin, laui, (candidate) => (candidate.actions_status?.pre_actions?.length ?? 0) > 0);
    expect(task.state).to.equal('scheduled');
    expect(task.actions_status.pre_actions).to.have.length(1);
    expect(task.actions_status.pre_actions?.[0]).to.include({ state: 'failed', laui: actions.no });
    const queue = await svc.service.eventStore.readStream(`queue-${connection}`);
    expect(queue.some((event) => (event.data as { task_laui?: string }).task_laui === laui)).to.equal(false);
  });

  it('given a failing post action and an SLA action on a quick run, when run, then the task stays success, the post failure is recorded and the SLA action never fires', async () => {
    const reply = await run('with-post', { post_actions: [ref('boom'), ref('yes')], running_actions: [ref('yes', { sla: 1 })] });
    const laui = (reply.json as { item_laui: string }).item_laui;
    const task = await waitForItem<Task>(admin, laui, (candidate) => (candidate.actions_status?.post_actions?.length ?? 0) === 2);
    expect(task.state).to.equal('success');
    expect(task.actions_status.post_actions?.map((entry) => entry.state)).to.deep.equal(['error', 'success']);
    expect(String(task.actions_status.post_actions?.[0]?.error)).to.include('post exploded');
    // The SLA (400 ms) passes after the run ended: a timer left armed would fire now.
    await new Promise((resolve) => setTimeout(resolve, 1200));
    const later = (await admin.get({ item_laui: laui })).json as Task;
    expect(later.actions_status.running_actions ?? []).to.deep.equal([]);
  });

  it('given a run outlasting its SLA, when the SLA passes, then the running action fires once while the operator goes on', async () => {
    const slow = await admin.createOk({
      item_type: 'operator',
      name: 'slow.operator',
      parent_laui: tree.folders.operator,
      codeblock: { language: 'javascript', code: 'export async function run() { await new Promise((r) => setTimeout(r, 1500)); }\nexport function check_completion() { return { status: "success" }; }\n' },
    });
    const reply = await svc.client().post('/api/v1/task/run', {
      json: {
        name: 'slow-sla',
        parent_laui: workflow,
        project_laui: tree.project_laui,
        account_laui: tree.account_laui,
        operator_laui: slow,
        connection_laui: connection,
        actions: { running_actions: [ref('yes', { sla: 1 })] },
      },
      token: admin.token,
    });
    const laui = (reply.json as { item_laui: string }).item_laui;
    const task = await waitForItem<Task>(admin, laui, (candidate) => candidate.state === 'success');
    expect(task.actions_status.running_actions?.map((entry) => entry.state)).to.deep.equal(['success']);
  });
});
