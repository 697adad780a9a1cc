import { expect } from 'chai';
import { startTestService, type TestService } from '../support/testService.ts';
import { taskBed, type TaskBed } from '../support/taskBed.ts';
import { catalogClient, waitForItem, type CatalogClient } from '../support/catalogFixture.ts';
import { queueHandler } from '../../command-side/queue/handler.ts';
import { changeTask } from '../../command-side/task/changeTask.ts';
import { metadataFor } from '../../shared/events.ts';

/** Two seconds per run: with more runs than slots, the later ones wait for a slot longer than the stale window (1 s). */
const PY_TWO_SECONDS = `
import time
def run(connection, payload, context):
    time.sleep(2)
`;

/** Runs until cancelled: the test decides when a slot frees. */
const JS_UNTIL_CANCELLED = `
export function run() { return null; }
export function check_completion() { return { status: 'running' }; }
`;

const JS_QUICK = 'export function run() { return null; }\n';

type Task = Record<string, unknown> & { state: string };
type Check = { triggered: boolean; severity: string; title: string; details: string };

describe('worker slots: waiting runs are never reaped, projects take turns, max_parallelism holds', function () {
  this.timeout(120_000);
  let svc: TestService;
  let admin: CatalogClient;
  let first: TaskBed;
  let second: TaskBed;
  const operators: Record<'twoSeconds' | 'untilCancelled' | 'quick', string> = { twoSeconds: '', untilCancelled: '', quick: '' };

  const run = async (bed: TaskBed, name: string, operator: string, extra: Record<string, unknown> = {}) => {
    const reply = await svc.client().post('/api/v1/task/run', { json: bed.taskBody(name, operator, extra), token: admin.token });
    expect(reply.status, reply.text).to.equal(200);
    return (reply.json as { item_laui: string }).item_laui;
  };
  const task = async (laui: string) => (await admin.get({ item_laui: laui })).json as Task;
  const waitFor = (laui: string, done: (task: Task) => boolean, timeoutMs = 60_000) => waitForItem<Task>(admin, laui, done, timeoutMs);
  const cancel = async (laui: string) => {
    const reply = await svc.client().post(`/api/v1/task/update/${laui}`, { json: { user_set_state: 'cancel' }, token: admin.token });
    expect(reply.status, reply.text).to.equal(200);
  };
  const diagnose = async (laui: string) => {
    const reply = await svc.client().get(`/api/v1/task/diagnose/${laui}`, { token: admin.token });
    expect(reply.status, reply.text).to.equal(200);
    return reply.json as Record<string, Check>;
  };
  const connection = (bed: TaskBed, name: string, maxParallelism: number) =>
    admin.createOk({ item_type: 'connection', name, parent_laui: bed.tree.folders.connection, content: {}, max_parallelism: maxParallelism });

  before(async () => {
    // Two worker slots, a one-second stale window and a reaper that looks five times a second.
    svc = await startTestService({ WORKER_CONCURRENCY: '2', REAPER_INTERVAL_MS: '200', WORKER_POLL_INTERVAL_MS: '50' });
    admin = catalogClient(svc, (await svc.login()).token);
    first = await taskBed(admin, 'slots-first', { name: 'wide', content: {}, max_parallelism: 10 });
    second = await taskBed(admin, 'slots-second', { name: 'wide', content: {}, max_parallelism: 10 });
    const operator = (name: string, codeblock: Record<string, unknown>) => admin.createOk({ item_type: 'operator', name, parent_laui: first.tree.folders.operator, codeblock });
    operators.twoSeconds = await operator('two-seconds.operator', { language: 'python', code: PY_TWO_SECONDS });
    operators.untilCancelled = await operator('until-cancelled.operator', { language: 'javascript', content: JS_UNTIL_CANCELLED });
    operators.quick = await operator('quick.operator', { language: 'javascript', content: JS_QUICK });
    await admin.createOk({
      item_type: 'config',
      name: 'system',
      parent_laui: first.tree.folders.config,
      config_type: 'system',
      content: { stale_heartbeat_seconds: 1, check_completion_timeout_seconds: 600 },
    });
  });
  after(async () => svc.stop());

  it('given six two-second runs on two worker slots and a one-second stale window, when they wait for a slot, then none is reaped and all end success', async () => {
    const runs: string[] = [];
    for (let index = 1; index <= 6; index += 1) runs.push(await run(first, `backlog-${index}`, operators.twoSeconds));
    // The last two wait at least two turnovers (4 s) for a slot: four times the stale window.
    for (const laui of runs) {
      const ended = await waitFor(laui, (candidate) => !['queued_for_connection', 'queued_in_redis', 'running'].includes(candidate.state));
      expect(ended.state, `${String(ended.name)}: ${JSON.stringify(ended.last_run_output)}`).to.equal('success');
      expect(ended.retry_number ?? 0).to.equal(0);
    }
  });

  it('given a run whose worker died after pick-up, when its beats stop, then it is reaped; a lease whose message no bus holds is reaped as never delivered', async () => {
    const orphanConnection = await connection(first, 'orphans', 2);
    const picked = await run(first, 'picked-up', operators.quick, { connection_laui: orphanConnection });
    const lost = await run(first, 'never-delivered', operators.quick, { connection_laui: orphanConnection });
    for (const laui of [picked, lost]) await waitFor(laui, (candidate) => candidate.state === 'success');
    // A lease without a worker behind it, as a worker that took it and died leaves it: one picked up
    // (running, beats begun at pick-up, then none), one whose message is gone (never delivered).
    const queue = queueHandler(svc.service.eventStore);
    const meta = metadataFor(null, new Date(), 'test');
    for (const laui of [picked, lost]) await queue.enqueue(orphanConnection, { laui, priority: 1, sortValues: {} }, meta);
    const { leases } = await queue.dispatch(orphanConnection, 2, {}, meta);
    expect(leases).to.have.length(2);
    const sessionOf = (laui: string) => leases.find((lease) => lease.taskLaui === laui)?.sessionId;
    const now = new Date().toISOString();
    await changeTask(svc.service.eventStore, picked, [{ state: 'queued_for_connection' }, { state: 'queued_in_redis', session_id: sessionOf(picked) }, { state: 'running', task_instance_start_date: now, latest_heartbeat: now }], meta);
    await changeTask(svc.service.eventStore, lost, [{ state: 'queued_for_connection' }, { state: 'queued_in_redis', session_id: sessionOf(lost) }], meta);
    const reaped = await waitFor(picked, (candidate) => candidate.state === 'error');
    expect(reaped.retry_number).to.equal(1);
    expect(JSON.stringify(reaped.last_run_output)).to.include('heartbeat went stale');
    const undelivered = await waitFor(lost, (candidate) => candidate.state === 'error');
    expect(JSON.stringify(undelivered.last_run_output)).to.include('never reached a worker');
    const released = (await svc.service.eventStore.readStream(`queue-${orphanConnection}`)).filter((event) => event.type === 'TaskSlotReleased' && (event.data as { reason: string }).reason === 'stale');
    expect(released).to.have.length(2);
  });

  it('given a project backlog holding both slots, when another project runs a task, then it starts at the next freed slot, before the backlog drains; diagnose shows the waiting runs with their place', async () => {
    const backlog: string[] = [];
    for (let index = 1; index <= 4; index += 1) backlog.push(await run(first, `hold-${index}`, operators.untilCancelled));
    const [a1, a2, a3, a4] = backlog as [string, string, string, string];
    try {
      await waitFor(a1, (candidate) => candidate.state === 'running');
      await waitFor(a2, (candidate) => candidate.state === 'running');
      const other = await run(second, 'other-project', operators.quick);
      expect((await task(other)).state).to.equal('queued_in_redis');

      // Diagnose: the other project's run is next (it has not been served); the backlog's waits behind it in turn.
      const otherChecks = await diagnose(other);
      expect(otherChecks.waiting_for_worker_slot).to.include({ triggered: true, severity: 'info', title: 'Waiting for a worker slot' });
      expect(otherChecks.waiting_for_worker_slot?.details).to.match(/; 0 run\(s\) ahead of it; 2 of 2 slots busy/);
      expect(otherChecks.worker_not_running?.triggered).to.equal(false);
      expect((await diagnose(a4)).waiting_for_worker_slot?.details).to.match(/; 2 run\(s\) ahead of it;/);
      expect((await diagnose(a1)).waiting_for_worker_slot?.triggered).to.equal(false);

      // One backlog run ends: its slot goes to the other project, not to the backlog's next run.
      await cancel(a1);
      const deadline = Date.now() + 60_000;
      let order: 'other first' | 'backlog first' | null = null;
      while (order === null && Date.now() < deadline) {
        const [otherNow, thirdNow] = await Promise.all([task(other), task(a3)]);
        if (otherNow.state === 'success') order = 'other first';
        else if (thirdNow.state !== 'queued_in_redis' && otherNow.state === 'queued_in_redis') order = 'backlog first';
        else await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(order, 'which run took the freed slot').to.equal('other first');
      expect((await task(a4)).state).to.equal('queued_in_redis');
    } finally {
      // The backlog runs until cancelled: cancelled, so that the service can stop.
      for (const laui of backlog) await cancel(laui);
      for (const laui of backlog) await waitFor(laui, (candidate) => candidate.state === 'cancelled');
    }
  });

  it('given a connection with max_parallelism 1 and free worker slots, when three runs are queued, then they run one after the other', async () => {
    const narrow = await connection(second, 'narrow', 1);
    const runs: string[] = [];
    for (let index = 1; index <= 3; index += 1) runs.push(await run(second, `narrow-${index}`, operators.twoSeconds, { connection_laui: narrow }));
    const ended = [];
    for (const laui of runs) ended.push(await waitFor(laui, (candidate) => candidate.state === 'success'));
    const spans = ended.map((item) => [String(item.task_instance_start_date), String(item.task_instance_end_date)] as const).sort(([a], [b]) => a.localeCompare(b));
    for (let index = 1; index < spans.length; index += 1) {
      expect(spans[index]![0] >= spans[index - 1]![1], `run ${index + 1} started before run ${index} ended`).to.equal(true);
    }
  });
});
