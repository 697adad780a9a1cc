import { expect } from 'chai';
import { itemStream } from '../../command-side/catalog/item.ts';
import { startTestService, type TestService } from '../support/testService.ts';
import { taskBed, type TaskBed } from '../support/taskBed.ts';
import { catalogClient, createUser, waitForItem, type CatalogClient } from '../support/catalogFixture.ts';
import { waitUntil } from '../support/waitUntil.ts';
import type { Reply } from '../support/HttpClient.ts';
import type { BackfillProgress } from '../../shared/task/backfill/backfillState.ts';

/** Reports what the run saw: its templated {{ds}}, its logical date and data interval; sleeps payload.sleep_ms first. */
const JS_REPORT = `
export async function run(connection, payload) { await new Promise((resolve) => setTimeout(resolve, Number(payload.sleep_ms ?? 0))); }
export function check_completion(connection, payload, context) {
  return { status: 'success', ds: payload.ds, logical_date: context.logical_date, start: context.data_interval_start, end: context.data_interval_end };
}
`;

type Progress = BackfillProgress;

const DAY_MS = 24 * 60 * 60 * 1000;
const inDays = (days: number): string => new Date(Date.now() + days * DAY_MS).toISOString();

describe('backfill: one run per cron step of a range, oldest first, the schedule kept (HTTP, embedded service)', function () {
  this.timeout(120_000);
  let svc: TestService;
  let admin: CatalogClient;
  let bed: TaskBed;
  let operator: string;

  const post = (path: string, body: unknown, token = admin.token): Promise<Reply> => svc.client().post(`/api/v1/task${path}`, { json: body, token });
  const progress = async (id: string, token = admin.token): Promise<Progress> => {
    const reply = await svc.client().get(`/api/v1/task/backfill/${id}`, { token });
    expect(reply.status, reply.text).to.equal(200);
    return reply.json as Progress;
  };
  const completed = async (id: string): Promise<Progress> => {
    let last: Progress | null = null;
    await waitUntil(async () => {
      last = await progress(id);
      return last.status === 'completed';
    }, `backfill ${id} completed`);
    return last as unknown as Progress;
  };
  const dailyTask = async (name: string, payload: Record<string, unknown> = {}): Promise<string> =>
    admin.createOk({ item_type: 'task', ...bed.taskBody(name, operator), frequency: '0 3 * * *', start_date: inDays(-3), end_date: inDays(30), payload: { ds: '{{ds}}', ...payload } });
  const backfill = async (body: Record<string, unknown>): Promise<string> => {
    const reply = await post('/backfill', body);
    expect(reply.status, reply.text).to.equal(200);
    return (reply.json as { backfill_id: string }).backfill_id;
  };

  /**
   * What a driver that stopped part way leaves in the log: the backfill of `days` registered and
   * requested, then `after(at)` (events of the backfill) and nothing else.
   */
  const seedBackfill = async (task: string, id: string, days: string[], maxActiveRuns: number, after: (at: string) => Array<{ type: string; data: Record<string, unknown> }>): Promise<void> => {
    const at = new Date().toISOString();
    const me = (await svc.client().get('/api/v1/user/me', { token: admin.token })).json as { laui: string };
    const metadata = { user_laui: me.laui, correlation_id: 'crash', causation_id: null, at };
    const store = svc.service.eventStore;
    const revision = (await store.readStream(itemStream(task))).at(-1)?.revision ?? 0;
    await store.append('backfills', [{ type: 'BackfillRegistered', data: { backfill_id: id, task_laui: task, at }, metadata }], 'any');
    const requested = {
      type: 'BackfillRequested',
      data: { backfill_id: id, task_laui: task, project_laui: bed.tree.project_laui, frequency: '0 3 * * *', start_date: days[0], end_date: days.at(-1), max_active_runs: maxActiveRuns, logical_dates: days, task_revision: revision, requested_by: me.laui, at },
    };
    await store.append(`backfill-${task}`, [requested, ...after(at)].map((event) => ({ ...event, metadata })), 'no_stream');
  };

  before(async () => {
    svc = await startTestService();
    admin = catalogClient(svc, (await svc.login()).token);
    bed = await taskBed(admin, 'backfill-co', { name: 'c', content: {}, max_parallelism: 4 });
    operator = await admin.createOk({ item_type: 'operator', name: 'report.operator', parent_laui: bed.tree.folders.operator, codeblock: { language: 'javascript', code: JS_REPORT } });
  });
  after(async () => svc?.stop());

  it('given a daily task, when backfilled over three days, then three runs, oldest first, each with its logical date and data interval; the schedule does not move', async () => {
    const task = await dailyTask('daily');
    const before = (await admin.get({ item_laui: task })).json as Record<string, unknown>;
    const id = await backfill({ item_laui: task, start_date: '2024-01-01', end_date: '2024-01-03T00:00:00Z' });

    const done = await completed(id);
    expect(done).to.include({ total: 3, done: 3, failed: 0, running: 0, pending: 0 });
    expect(done.runs.map((run) => [run.logical_date, run.state, run.data_interval_end])).to.deep.equal([
      ['2024-01-01T00:00:00.000Z', 'success', '2024-01-02T00:00:00.000Z'],
      ['2024-01-02T00:00:00.000Z', 'success', '2024-01-03T00:00:00.000Z'],
      ['2024-01-03T00:00:00.000Z', 'success', '2024-01-04T00:00:00.000Z'],
    ]);
    // One after another: each started after the one before it ended.
    for (let index = 1; index < done.runs.length; index += 1) expect(String(done.runs[index]?.started_at) >= String(done.runs[index - 1]?.ended_at)).to.equal(true);

    const after = await waitForItem<Record<string, unknown>>(admin, task, (item) => item.state === 'success');
    expect(after.last_run_output).to.deep.include({ ds: '2024-01-03', logical_date: '2024-01-03T00:00:00.000Z', start: '2024-01-03T00:00:00.000Z', end: '2024-01-04T00:00:00.000Z' });
    for (const field of ['logical_date', 'next_run_date', 'retry_number', 'prev_interval_start', 'prev_interval_end']) expect(after[field] ?? null, field).to.deep.equal(before[field] ?? null);

    // Every event of the three runs names the backfill.
    const events = await svc.service.eventStore.readStream(itemStream(task));
    const named = events.filter((event) => (event.data as { backfill_id?: unknown }).backfill_id === id).map((event) => event.type);
    expect(named.filter((type) => type === 'TaskQueued')).to.have.length(3);
    expect(named.filter((type) => type === 'TaskStarted')).to.have.length(3);
    expect(named.filter((type) => type === 'TaskSucceeded')).to.have.length(3);
  });

  it('given max_active_runs 3 over five days, when backfilled, then three runs at once (the task and two lanes), never more, each run named by the backfill; the lanes are soft-deleted once it completes', async () => {
    const task = await dailyTask('parallel', { sleep_ms: 3000 });
    const id = await backfill({ item_laui: task, start_date: '2024-03-01', end_date: '2024-03-05', max_active_runs: 3 });

    const done = await completed(id);
    expect(done).to.include({ total: 5, done: 5, failed: 0, running: 0, pending: 0, max_active_runs: 3 });
    expect(done.runs.map((run) => run.state)).to.deep.equal(Array(5).fill('success'));
    // Runs in flight at once, from the steps' recorded start and end: three (the first wave), never four.
    const moments = done.runs.flatMap((run) => [
      { at: String(run.started_at), delta: 1 },
      { at: String(run.ended_at), delta: -1 },
    ]);
    moments.sort((a, b) => (a.at === b.at ? a.delta - b.delta : a.at < b.at ? -1 : 1));
    let inFlight = 0;
    let most = 0;
    for (const moment of moments) {
      inFlight += moment.delta;
      most = Math.max(most, inFlight);
    }
    expect(most).to.equal(3);
    // Oldest first: the steps started in logical-date order.
    const starts = done.runs.map((run) => String(run.started_at));
    expect(starts).to.deep.equal([...starts].sort());

    const runners = [...new Set(done.runs.map((run) => String(run.run_task_laui)))];
    expect(runners).to.have.length(3);
    expect(runners).to.include(task);
    const lanes = runners.filter((laui) => laui !== task);
    let succeeded = 0;
    for (const runner of runners) {
      const events = await svc.service.eventStore.readStream(itemStream(runner));
      const named = events.filter((event) => (event.data as { backfill_id?: unknown }).backfill_id === id);
      succeeded += named.filter((event) => event.type === 'TaskSucceeded').length;
      const ran = done.runs.filter((run) => run.run_task_laui === runner).map((run) => run.logical_date);
      const queued = named.filter((event) => event.type === 'TaskQueued').map((event) => (event.data as { changes: { logical_date: string } }).changes.logical_date);
      expect(queued, `the runs of ${runner}`).to.deep.equal(ran);
    }
    expect(succeeded).to.equal(5);
    for (const lane of lanes) {
      const item = await waitForItem<Record<string, unknown>>(admin, lane, (doc) => typeof doc.deleted_at === 'string');
      expect(item).to.include({ backfill_lane_of: task, item_type: 'task' });
      expect(String(item.name)).to.match(new RegExp(`\\(backfill ${id}, lane [12]\\)$`));
    }
  });

  it('given bad requests, when posted, then 400 with the detail, 404 for a missing task or backfill', async () => {
    const task = await dailyTask('refusals');
    const adhoc = await admin.createOk({ item_type: 'task', ...bed.taskBody('adhoc', operator) });
    const cases: Array<[unknown, number, string | RegExp]> = [
      [{ item_laui: task, start_date: '2024-01-03', end_date: '2024-01-01' }, 400, 'start_date must be earlier than or equal to end_date'],
      [{ item_laui: adhoc, start_date: '2024-01-01', end_date: '2024-01-03' }, 400, /^Backfill needs a scheduled task/],
      [{ item_laui: task, start_date: '2024-01-01', end_date: '2024-01-03', max_active_runs: 0 }, 400, 'max_active_runs must be an integer from 1 to 32'],
      [{ item_laui: task, start_date: '2024-01-01', end_date: '2024-01-03', max_active_runs: 33 }, 400, 'max_active_runs must be an integer from 1 to 32'],
      [{ item_laui: task, start_date: '2020-01-01', end_date: '2024-01-03' }, 400, /^Too many runs/],
      [{ item_laui: task, start_date: 'yesterday', end_date: '2024-01-03' }, 400, /^start_date is required/],
      [{ start_date: '2024-01-01', end_date: '2024-01-03' }, 400, /^item_laui is required/],
      [[1, 2], 400, /^The body must be a JSON object/],
      [{ item_laui: '65a0c0ffee0000000000beef', start_date: '2024-01-01', end_date: '2024-01-03' }, 404, 'Item not found'],
    ];
    for (const [body, status, detail] of cases) {
      const head = await svc.service.eventStore.headPosition();
      const reply = await post('/backfill', body);
      expect(await svc.service.eventStore.headPosition(), 'a refused request writes nothing').to.equal(head);
      expect(reply.status, `${JSON.stringify(body)}: ${reply.text}`).to.equal(status);
      const got = (reply.json as { detail: string }).detail;
      if (typeof detail === 'string') expect(got).to.equal(detail);
      else expect(got).to.match(detail);
    }
    expect((await svc.client().get('/api/v1/task/backfill/65a0c0ffee0000000000beef', { token: admin.token })).status).to.equal(404);
    expect((await post('/backfill/65a0c0ffee0000000000beef/cancel', {})).status).to.equal(404);
  });

  it("given another user's backfill, when that user reads, requests or cancels it, then 404 / 403 and nothing changes", async () => {
    const task = await dailyTask('tenant', { sleep_ms: 300 });
    const stranger = await createUser(svc, admin.token, 'backfill-stranger');
    const id = await backfill({ item_laui: task, start_date: '2024-01-01', end_date: '2024-01-02' });
    expect((await svc.client().get(`/api/v1/task/backfill/${id}`, { token: stranger.token })).status).to.equal(404);
    expect((await post(`/backfill/${id}/cancel`, {}, stranger.token)).status).to.equal(404);
    expect((await post('/backfill', { item_laui: task, start_date: '2024-01-01', end_date: '2024-01-02' }, stranger.token)).status).to.equal(403);
    expect((await svc.client().get(`/api/v1/task/backfill?task_laui=${task}`, { token: stranger.token })).status).to.equal(403);
    expect((await completed(id)).done).to.equal(2);
  });

  it('given two backfills of one task at once, then one is taken and the other is 409; cancelled, no new run starts and the task may be backfilled again', async () => {
    const task = await dailyTask('twice', { sleep_ms: 400 });
    const body = { item_laui: task, start_date: '2024-02-01', end_date: '2024-02-10' };
    const replies = await Promise.all([post('/backfill', body), post('/backfill', body)]);
    expect(replies.map((reply) => reply.status).sort()).to.deep.equal([200, 409]);
    const id = (replies.find((reply) => reply.status === 200)?.json as { backfill_id: string }).backfill_id;
    expect((replies.find((reply) => reply.status === 409)?.json as { detail: string }).detail).to.match(new RegExp(`^Backfill ${id} of task ${task} is still running`));

    await waitUntil(async () => (await progress(id)).running === 1, 'the first run started');
    const cancelled = await post(`/backfill/${id}/cancel`, {});
    expect(cancelled.status, cancelled.text).to.equal(200);
    expect((cancelled.json as Progress).status).to.be.oneOf(['cancelled', 'completed']);
    const done = await completed(id);
    expect(done.runs[0]?.state).to.equal('success');
    expect(done.runs.slice(1).map((run) => run.state)).to.deep.equal(Array(9).fill('not_run'));
    expect(done).to.include({ total: 10, done: 1, failed: 0, running: 0, pending: 9 });
    expect((await post(`/backfill/${id}/cancel`, {})).status).to.equal(409);

    expect((await post('/backfill', { item_laui: task, start_date: '2024-03-01', end_date: '2024-03-01' })).status).to.equal(200);
    const listed = await svc.client().get(`/api/v1/task/backfill?task_laui=${task}`, { token: admin.token });
    expect(listed.status, listed.text).to.equal(200);
    expect((listed.json as { backfills: Progress[] }).backfills.map((each) => each.start_date)).to.deep.equal(['2024-03-01T00:00:00.000Z', '2024-02-01T00:00:00.000Z']);
  });

  it("given a run of the task in flight, when backfilled, then the backfill's first run waits for it to end; diagnose shows the backfill", async () => {
    const task = await dailyTask('busy', { sleep_ms: 1500 });
    const ran = await post('/run', { item_laui: task });
    expect(ran.status, ran.text).to.equal(200);
    await waitForItem<Record<string, unknown>>(admin, task, (item) => item.state === 'running');
    const id = await backfill({ item_laui: task, start_date: '2024-01-01', end_date: '2024-01-01' });
    const diagnosed = await svc.client().get(`/api/v1/task/diagnose/${task}`, { token: admin.token });
    expect((diagnosed.json as Record<string, { triggered: boolean; details: string }>).backfill_running).to.include({ triggered: true });
    const manual = await waitForItem<Record<string, unknown>>(admin, task, (item) => item.state === 'success' && (item as { backfill_id?: unknown }).backfill_id !== id, 30_000);
    const done = await completed(id);
    expect(done.runs[0]?.state).to.equal('success');
    expect(String(done.runs[0]?.started_at) >= String(manual.task_instance_end_date ?? manual.last_run_date)).to.equal(true);
  });

  it('given a step recorded started whose run never reached the task (the process died between the two), when a driver passes, then it asks for the run again and the backfill completes', async () => {
    const task = await dailyTask('resumed');
    const id = '65a0c0ffee0000000000bf01';
    await seedBackfill(task, id, ['2024-05-01T00:00:00.000Z', '2024-05-02T00:00:00.000Z'], 1, (at) => [{ type: 'BackfillRunStarted', data: { backfill_id: id, logical_date: '2024-05-01T00:00:00.000Z', at } }]);
    const done = await completed(id);
    expect(done.runs.map((run) => [run.logical_date, run.state])).to.deep.equal([
      ['2024-05-01T00:00:00.000Z', 'success'],
      ['2024-05-02T00:00:00.000Z', 'success'],
    ]);
    const queued = (await svc.service.eventStore.readStream(itemStream(task))).filter((event) => event.type === 'TaskQueued' && (event.data as { backfill_id?: unknown }).backfill_id === id);
    expect(queued.map((event) => (event.data as { changes: { logical_date: string } }).changes.logical_date)).to.deep.equal(['2024-05-01T00:00:00.000Z', '2024-05-02T00:00:00.000Z']);
  });

  it('given a lane recorded opened whose creation a stop cut short, when a driver passes, then it creates the lane, runs a step on it and the backfill completes', async () => {
    const task = await dailyTask('lane-resumed', { sleep_ms: 1500 });
    const id = '65a0c0ffee0000000000bf02';
    const lane = '65a0c0ffee0000000000bf03';
    const days = ['2024-06-01T00:00:00.000Z', '2024-06-02T00:00:00.000Z'];
    await seedBackfill(task, id, days, 2, (at) => [{ type: 'BackfillLaneOpened', data: { backfill_id: id, lane: 1, task_laui: lane, at } }]);
    const done = await completed(id);
    expect(done.runs.map((run) => [run.logical_date, run.state])).to.deep.equal([
      [days[0], 'success'],
      [days[1], 'success'],
    ]);
    expect(done.runs.map((run) => run.run_task_laui)).to.have.members([task, lane]);
    const created = (await svc.service.eventStore.readStream(itemStream(lane)))[0];
    expect(created?.type).to.equal('ItemCreated');
  });

  it('given a backfill part way, when the service stops and starts again on its data directory, then the new process resumes it: every step runs once and it completes', async () => {
    const task = await dailyTask('restarted', { sleep_ms: 300 });
    // A run the stop cuts short is ended by the new process's reaper once its beats are this stale (last test of the file: the setting stays).
    await admin.createOk({ item_type: 'config', name: 'system', parent_laui: bed.tree.folders.config, config_type: 'system', content: { stale_heartbeat_seconds: 2 } });
    const id = await backfill({ item_laui: task, start_date: '2024-07-01', end_date: '2024-07-04' });
    await waitUntil(async () => (await progress(id)).done >= 1, 'the first step done');
    await svc.stop({ keepData: true });
    svc = await startTestService({}, {}, svc.dataDir);
    admin = catalogClient(svc, (await svc.login()).token);

    const done = await completed(id);
    expect(done.total).to.equal(4);
    // A run the stop cut short ends like any abandoned run (the reaper's error): it is counted, never left running.
    expect(done.running + done.pending).to.equal(0);
    const queued = (await svc.service.eventStore.readStream(itemStream(task))).filter((event) => event.type === 'TaskQueued' && (event.data as { backfill_id?: unknown }).backfill_id === id);
    expect(queued.map((event) => (event.data as { changes: { logical_date: string } }).changes.logical_date)).to.deep.equal(done.runs.map((run) => run.logical_date));
  });
});

