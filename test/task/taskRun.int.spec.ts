import { expect } from 'chai';
import { startTestService, type TestService } from '../support/testService.ts';
import { taskBed, type TaskBed } from '../support/taskBed.ts';
import { catalogClient, waitForItem, type CatalogClient } from '../support/catalogFixture.ts';

const JS_SUCCESS = `
let polls = 0;
export function initialize(connection, payload, context) {}
export function run(connection, payload, context) { return { started: true }; }
export function check_completion(connection, payload, context) {
  polls += 1;
  return polls < 2 ? { status: 'running' } : { status: 'success', greeting: payload.greeting, host: connection.host, task: context.task_name };
}
export function finish() {}
`;

const PY_FAILED = `
def run(connection, payload, context):
    return None

def check_completion(connection, payload, context):
    return {"status": "failed", "why": "bad data"}
`;

const PY_THROWS = `
def run(connection, payload, context):
    raise ValueError("boom from python")
`;

const JS_SLOW = `
export async function run() { await new Promise((resolve) => setTimeout(resolve, 300)); }
export function check_completion() { return { status: 'success' }; }
`;

type Task = Record<string, unknown> & { state: string; last_run_output: Record<string, unknown> };

describe('task engine (HTTP, embedded service, real operator processes)', function () {
  this.timeout(60_000);
  let svc: TestService;
  let admin: CatalogClient;
  let tree: TaskBed['tree'];
  let connection: string;
  let bed: TaskBed;

  const operator = (name: string, language: string, code: string) =>
    admin.createOk({ item_type: 'operator', name: `${name}.operator`, parent_laui: tree.folders.operator, codeblock: { language, code } });
  const run = (body: Record<string, unknown>) => svc.client().post('/api/v1/task/run', { json: body, token: admin.token });
  const taskBody = (name: string, operatorLaui: string, extra: Record<string, unknown> = {}) => ({ item_type: 'task', ...bed.taskBody(name, operatorLaui, extra) });
  const waitFor = (laui: string, done: (task: Task) => boolean, timeoutMs?: number) => waitForItem<Task>(admin, laui, done, timeoutMs);
  const terminal = (task: Task) => ['success', 'error', 'timeout', 'cancelled', 'fail'].includes(task.state);

  before(async () => {
    svc = await startTestService();
    admin = catalogClient(svc, (await svc.login()).token);
    bed = await taskBed(admin, 'tasks-co', { name: 'target', content: { host: 'db.example', password: 'pw' }, max_parallelism: 3 });
    ({ tree, connection } = bed);
  });
  after(async () => svc.stop());

  it('given a JavaScript operator, when run ad hoc, then it reaches success with its output and templated payload', async () => {
    const op = await operator('hello', 'javascript', JS_SUCCESS);
    const reply = await run(taskBody('hello-task', op, { payload: { greeting: 'hi {{ds}}' } }));
    expect(reply.status, reply.text).to.equal(200);
    const laui = (reply.json as { item_laui: string }).item_laui;
    const task = await waitFor(laui, terminal);
    expect(task.state).to.equal('success');
    const today = new Date().toISOString().slice(0, 10);
    expect(task.last_run_output).to.include({ status: 'success', greeting: `hi ${today}`, host: 'db.example', task: 'hello-task' });
    expect(task).to.include({ iteration: 1, retry_number: 0 });
    expect(task.last_run_date).to.be.a('string');
    const history = (await admin.getPath(`/get/item_history?item_laui=${laui}`)).json as Array<{ changes?: { state?: string } }>;
    expect(history.map((entry) => entry.changes?.state).filter(Boolean)).to.deep.equal(['queued_for_connection', 'queued_in_redis', 'running', 'success']);
  });

  it('given Python operators that fail or throw, when run, then the task ends error with the reason and retry_number counts', async () => {
    const failedReply = await run(taskBody('py-failed', await operator('pyfailed', 'python', PY_FAILED)));
    const failed = await waitFor((failedReply.json as { item_laui: string }).item_laui, terminal);
    expect(failed.state).to.equal('error');
    expect(failed.retry_number).to.equal(1);
    const thrown = await waitFor(((await run(taskBody('py-throws', await operator('pythrows', 'python', PY_THROWS)))).json as { item_laui: string }).item_laui, terminal);
    expect(thrown.state).to.equal('error');
    expect(JSON.stringify(thrown.last_run_output)).to.include('boom from python');
  });

  it('given an operator without code, when run, then the task ends fail', async () => {
    const op = await admin.createOk({ item_type: 'operator', name: 'empty.operator', parent_laui: tree.folders.operator });
    const task = await waitFor(((await run(taskBody('no-code', op))).json as { item_laui: string }).item_laui, terminal);
    expect(task.state).to.equal('fail');
  });

  it('given the spec 422 rows, when run, then each detail is exact', async () => {
    const op = await operator('valid', 'javascript', JS_SLOW);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ ...taskBody('x1', op), item_type: 'payload' }, 'only tasks can be executed'],
      [taskBody('x2', op, { frequency: '* * *' }), 'invalid cron expression: * * *'],
      [taskBody('x3', op, { frequency: '0 0 * * *' }), 'start_date and end_date required for scheduled tasks'],
      [taskBody('x4', op, { frequency: '0 0 * * *', start_date: '2026-02-01T00:00:00Z', end_date: '2026-01-01T00:00:00Z' }), 'end_date must be greater than or equal to start_date'],
    ];
    for (const [body, detail] of cases) {
      const reply = await run(body);
      expect(reply.status, JSON.stringify(body)).to.equal(422);
      expect(reply.json).to.deep.equal({ detail });
    }
    const missing = await run(taskBody('x5', '65a0000000000000000000aa'));
    expect(missing.status).to.equal(422);
    expect((missing.json as { detail: string }).detail).to.include('operator item not found: 65a0000000000000000000aa');
    expect((await run({ item_laui: '65a0000000000000000000bb' })).status).to.equal(404);
  });

  it('given an existing unique key, when run again with the same key, then the existing task is returned and run', async () => {
    const op = await operator('again', 'javascript', JS_SLOW);
    const first = ((await run(taskBody('same-key', op))).json as { item_laui: string }).item_laui;
    await waitFor(first, terminal);
    const second = await run(taskBody('same-key', op));
    expect((second.json as { item_laui: string }).item_laui).to.equal(first);
    const task = await waitFor(first, (candidate) => terminal(candidate) && candidate.iteration === 2);
    expect(task.state).to.equal('success');
  });

  it('given 60 runs on a connection with max_parallelism 3, when they race, then never more than 3 run at once and all finish', async () => {
    const op = await operator('slow', 'javascript', JS_SLOW);
    const replies = await Promise.all(Array.from({ length: 60 }, (_, index) => run(taskBody(`par-${index}`, op))));
    expect(replies.every((reply) => reply.status === 200)).to.equal(true);
    const lauis = replies.map((reply) => (reply.json as { item_laui: string }).item_laui);
    for (const laui of lauis) expect((await waitFor(laui, terminal, 60_000)).state).to.equal('success');
    // A run frees its slot in the commit after its terminal state: the last one may still be on its way.
    const metrics = await waitForItem<Record<string, unknown>>(admin, connection, (item) => item.current_parallelism === 0, 10_000);
    expect(metrics).to.include({ current_parallelism: 0, in_queue: 0, max_parallelism: 3 });
    // Replay the queue stream: the number of leases held never exceeded 3.
    const events = await svc.service.eventStore.readStream(`queue-${connection}`);
    let running = 0;
    let peak = 0;
    for (const event of events) {
      if (event.type === 'TaskLeased') running += 1;
      if (event.type === 'TaskSlotReleased') running -= 1;
      peak = Math.max(peak, running);
    }
    expect(peak).to.equal(3);
    expect(running).to.equal(0);
  });
});
