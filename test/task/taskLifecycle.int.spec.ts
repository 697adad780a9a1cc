import { expect } from 'chai';
import { startTestService, type TestService } from '../support/testService.ts';
import { taskBed, type TaskBed } from '../support/taskBed.ts';
import { catalogClient, createUser, waitForItem, type CatalogClient } from '../support/catalogFixture.ts';
import { EXECUTE_TASK } from '../../command-side/task/taskDeps.ts';

const PY_SLOW = `
import time
def run(connection, payload, context):
    time.sleep(0.2)

def check_completion(connection, payload, context):
    return {"status": "running"}
`;

const JS_QUICK = `
export function run() { return null; }
export function check_completion() { return { status: 'success', done: true }; }
`;

type Task = Record<string, unknown> & { state: string };

describe('task lifecycle: cancel, timeout, reset, finish, update, duplicates and dead workers', function () {
  this.timeout(60_000);
  let svc: TestService;
  let admin: CatalogClient;
  let tree: TaskBed['tree'];
  let connection: string;
  let bed: TaskBed;
  let slow: string;
  let quick: string;

  const post = (path: string, json?: unknown) => svc.client().post(`/api/v1/task${path}`, json === undefined ? { token: admin.token } : { json, token: admin.token });
  const task = (laui: string) => admin.get({ item_laui: laui }).then((reply) => reply.json as Task);
  const waitFor = (laui: string, done: (task: Task) => boolean, timeoutMs?: number) => waitForItem<Task>(admin, laui, done, timeoutMs);
  const runNew = async (name: string, operatorLaui: string, extra: Record<string, unknown> = {}) => {
    const reply = await post('/run', bed.taskBody(name, operatorLaui, extra));
    expect(reply.status, reply.text).to.equal(200);
    return (reply.json as { item_laui: string }).item_laui;
  };

  before(async () => {
    // A short stale-heartbeat window and a fast reaper make the dead-worker case testable.
    svc = await startTestService({ REAPER_INTERVAL_MS: '200' });
    admin = catalogClient(svc, (await svc.login()).token);
    bed = await taskBed(admin, 'life-co', { name: 'c', content: {}, max_parallelism: 1 });
    ({ tree, connection } = bed);
    slow = await admin.createOk({ item_type: 'operator', name: 'slow.operator', parent_laui: tree.folders.operator, codeblock: { language: 'python', code: PY_SLOW } });
    quick = await admin.createOk({ item_type: 'operator', name: 'quick.operator', parent_laui: tree.folders.operator, codeblock: { language: 'javascript', content: JS_QUICK } });
    await admin.createOk({
      item_type: 'config',
      name: 'system',
      parent_laui: tree.folders.config,
      config_type: 'system',
      content: { check_completion_timeout_seconds: 2, stale_heartbeat_seconds: 1 },
    });
  });
  after(async () => svc.stop());

  it('given a running task, when user_set_state is set to cancel, then the worker stops it as cancelled and frees the slot', async () => {
    const laui = await runNew('to-cancel', slow);
    await waitFor(laui, (candidate) => candidate.state === 'running');
    const update = await post(`/update/${laui}`, { user_set_state: 'cancel' });
    expect(update.status).to.equal(200);
    expect(update.json).to.deep.equal({ item_laui: laui });
    expect((await waitFor(laui, (candidate) => candidate.state === 'cancelled')).user_set_state).to.equal('cancel');
    const next = await runNew('after-cancel', quick);
    expect((await waitFor(next, (candidate) => candidate.state === 'success')).last_run_output).to.include({ done: true });
  });

  it('given check_completion that never finishes, when the completion timeout passes, then the task ends timeout with retry_number 1', async () => {
    const laui = await runNew('to-timeout', slow);
    const ended = await waitFor(laui, (candidate) => candidate.state === 'timeout');
    expect(ended.retry_number).to.equal(1);
  });

  it('given update bodies, when invalid, then 422; duration is truncated to an integer; unknown task 404', async () => {
    const laui = await runNew('to-update', quick);
    await waitFor(laui, (candidate) => candidate.state === 'success');
    expect((await post(`/update/${laui}`, { state: 'exploded' })).status).to.equal(422);
    expect((await post(`/update/${laui}`, { nonsense: 1 })).status).to.equal(422);
    expect((await post(`/update/${laui}`, { duration: 12.9 })).status).to.equal(200);
    expect((await task(laui)).duration).to.equal(12);
    expect((await post('/update/65a0000000000000000000cc', { duration: 1 })).status).to.equal(404);
  });

  it('given a task not in its queue, when finished, then 404; a reset puts it back to scheduled with cleared fields', async () => {
    const laui = await runNew('to-reset', quick);
    await waitFor(laui, (candidate) => candidate.state === 'success');
    const finish = await post(`/finish/${laui}`);
    expect(finish.status).to.equal(404);
    const reset = await post(`/dangerously_reset/${laui}`);
    expect(reset.status).to.equal(200);
    expect(await task(laui)).to.include({ state: 'scheduled', user_set_state: null });
    expect((await task(laui)).last_run_output).to.deep.equal({});
    expect((await post('/dangerously_reset/65a0000000000000000000cc')).status).to.equal(404);
  });

  it('given a running run and one waiting for its slot, when a client ends it (POST /task/update error, then /task/finish), then the lifecycle records the end and the finish leases the waiting run', async () => {
    const running = await runNew('ext-end', slow);
    await waitFor(running, (candidate) => candidate.state === 'running');
    const waiting = await runNew('ext-next', quick);
    expect((await task(waiting)).state).to.equal('queued_for_connection');

    const update = await post(`/update/${running}`, { state: 'error', last_run_output: { error: 'ended by its client' } });
    expect(update.status, update.text).to.equal(200);
    // The lifecycle's Errored row, as at a worker: retry_number counted, the client's fields written with it.
    const ended = await task(running);
    expect(ended).to.include({ state: 'error', retry_number: 1 });
    expect(ended.last_run_output).to.deep.equal({ error: 'ended by its client' });
    expect((await task(waiting)).state, 'the slot is the finish\'s to free').to.equal('queued_for_connection');

    const finish = await post(`/finish/${running}`);
    expect(finish.status, finish.text).to.equal(200);
    await waitFor(waiting, (candidate) => candidate.state === 'success');
    expect((await post(`/finish/${running}`)).status, 'no longer in its queue').to.equal(404);
    expect((await task(running)).state).to.equal('error');
  });

  it('given the same dispatch message delivered twice, when workers consume both, then the task runs once', async () => {
    const laui = await runNew('dup', quick);
    const done = await waitFor(laui, (candidate) => candidate.state === 'success');
    // Replay the very message the dispatcher sent: its session is no longer current.
    await svc.service.bus.publish(EXECUTE_TASK, laui, {
      task_laui: laui,
      connection_laui: connection,
      dispatch_id: 'replayed',
      session_id: String(done.session_id),
      access_token: '',
      payload: null,
      user_laui: null,
      position: null,
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await task(laui)).iteration).to.equal(1);
  });

  it('given a lease whose worker died (no heartbeat), when the reaper runs, then the task ends error (retry rule applies), the lease is released as stale and the slot goes to the waiting task', async () => {
    const laui = await runNew('orphan', quick);
    await waitFor(laui, (candidate) => candidate.state === 'success');
    // Simulate a worker that took the lease and died: lease a slot without any worker behind it.
    const { queueHandler } = await import('../../command-side/queue/handler.ts');
    const { metadataFor } = await import('../../shared/events.ts');
    const queue = queueHandler(svc.service.eventStore);
    const meta = metadataFor(null, new Date(), 'test');
    await queue.enqueue(connection, { laui, priority: 1, sortValues: {} }, meta);
    const { leases } = await queue.dispatch(connection, 1, {}, meta);
    expect(leases).to.have.length(1);
    // ...and marked the task running under that lease before it died.
    const { changeTask } = await import('../../command-side/task/changeTask.ts');
    // (through the rows of the state table a real dispatch takes: success -> queued_for_connection -> queued_in_redis -> running)
    await changeTask(svc.service.eventStore, laui, [{ state: 'queued_for_connection' }, { state: 'queued_in_redis', session_id: leases[0]?.sessionId }, { state: 'running' }], meta);
    const waiting = await runNew('waits-for-slot', quick);
    expect((await task(waiting)).state).to.equal('queued_for_connection');
    const released = await waitFor(waiting, (candidate) => candidate.state === 'success', 15_000);
    expect(released.state).to.equal('success');
    const orphan = await waitFor(laui, (candidate) => candidate.state === 'error');
    expect(orphan.retry_number).to.equal(1);
    expect(JSON.stringify(orphan.last_run_output)).to.include('heartbeat');
    const events = await svc.service.eventStore.readStream(`queue-${connection}`);
    expect(events.some((event) => event.type === 'TaskSlotReleased' && (event.data as { reason: string }).reason === 'stale')).to.equal(true);
  });

  it('given multiple_tasks with one unknown laui, then 404; with good ones, then each gets a result', async () => {
    const a = await runNew('multi-a', quick);
    const b = await runNew('multi-b', quick);
    await waitFor(a, (candidate) => candidate.state === 'success');
    await waitFor(b, (candidate) => candidate.state === 'success');
    expect((await post('/multiple_tasks', { task_lauis: [a, '65a0000000000000000000dd'] })).status).to.equal(404);
    const reply = await post('/multiple_tasks', { task_lauis: [a, b] });
    expect(reply.status).to.equal(200);
    const results = (reply.json as { task_results: Array<{ task_laui: string }> }).task_results;
    expect(results.map((result) => result.task_laui)).to.deep.equal([a, b]);
    await waitFor(b, (candidate) => candidate.state === 'success' && candidate.iteration === 2);
  });

  it('given multiple_tasks with an invalid task, a repeated one and two connections, then the invalid one is omitted, each other runs once in request order, one queue commit per connection; without EDIT 403', async () => {
    const wide = await admin.createOk({ item_type: 'connection', name: 'wide', parent_laui: tree.folders.connection, content: {}, max_parallelism: 1 });
    const create = (name: string, operatorLaui: string, connectionLaui: string, priority = 1) =>
      admin.createOk({ item_type: 'task', ...bed.taskBody(name, operatorLaui, { connection_laui: connectionLaui, priority }) });
    const first = await create('batch-1', quick, wide);
    const second = await create('batch-2', quick, wide, 5);
    const other = await create('batch-other', quick, connection);
    const doomed = await admin.createOk({ item_type: 'operator', name: 'doomed.operator', parent_laui: tree.folders.operator, codeblock: { language: 'javascript', content: JS_QUICK } });
    const invalid = await create('batch-invalid', doomed, wide);
    expect((await admin.post('/delete', { item_laui: doomed })).status).to.equal(200);

    const stranger = await createUser(svc, admin.token, 'batch-stranger');
    const denied = await svc.client().post('/api/v1/task/multiple_tasks', { json: { task_lauis: [first] }, token: stranger.token });
    expect(denied.status, denied.text).to.equal(403);
    expect(denied.json).to.deep.equal({ detail: 'Access denied' });

    const reply = await post('/multiple_tasks', { task_lauis: [first, invalid, second, first, other] });
    expect(reply.status, reply.text).to.equal(200);
    const results = (reply.json as { task_results: Array<{ task_laui: string; execution_result_id: string | null }> }).task_results;
    expect(results.map((result) => result.task_laui)).to.deep.equal([first, second, other]);
    // Second took the slot (its message id); first waits in the queue, not yet sent to a worker.
    expect(results.map((result) => typeof result.execution_result_id)).to.deep.equal(['object', 'string', 'string']);
    expect(results[0]?.execution_result_id).to.equal(null);
    for (const laui of [first, second, other]) await waitFor(laui, (candidate) => candidate.state === 'success' && candidate.iteration === 1);
    expect((await task(invalid)).state).to.not.match(/queued|running|success/);

    // One decision for the connection's single slot: both runs joined its queue, and the slot went to
    // the higher priority of the batch, not to the first to arrive (an arrival leased in the decision
    // that enqueued it is written as one TaskLeased carrying it). First ran once the slot was free.
    const queue = (await svc.service.eventStore.readStream(`queue-${wide}`)).map(
      (event) => `${event.type} ${(event.data as { task_laui: string }).task_laui}${'enqueued' in event.data ? ' on arrival' : ''}`,
    );
    expect(queue.slice(0, 2)).to.deep.equal([`TaskEnqueued ${first}`, `TaskLeased ${second} on arrival`]);
    expect(queue).to.include(`TaskLeased ${first}`);
  });
});
