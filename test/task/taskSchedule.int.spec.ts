import { expect } from 'chai';
import { metadataFor } from '../../shared/events.ts';
import { newLaui } from '../../shared/ids.ts';
import { builtinVariables } from '../../shared/task/templating.ts';
import { itemStream } from '../../command-side/catalog/item.ts';
import { startTestService, type TestService } from '../support/testService.ts';
import { taskBed, type TaskBed } from '../support/taskBed.ts';
import { catalogClient, waitForItem, type CatalogClient } from '../support/catalogFixture.ts';
import type { Reply } from '../support/HttpClient.ts';

/** Returns what the payload rendered to: the run's {{ds}} and {{ts}}. */
const JS_ECHO = `
export function run() { return null; }
export function check_completion(connection, payload) { return { status: 'success', ds: payload.ds, ts: payload.ts }; }
`;

const DAY_MS = 24 * 60 * 60 * 1000;
const inDays = (days: number): string => new Date(Date.now() + days * DAY_MS).toISOString();

type Task = Record<string, unknown> & { state: string; version: number };

/** Each schedule no run could ever take, with the spec's 422 detail (spec 4.2, POST /task/run). */
const BAD_SCHEDULES: Array<[string, Record<string, unknown>, string]> = [
  ['a minute of 61', { frequency: '61 * * * *', start_date: inDays(-1), end_date: inDays(30) }, 'invalid cron expression: 61 * * * *'],
  ['words', { frequency: 'every 5 minutes', start_date: inDays(-1), end_date: inDays(30) }, 'invalid cron expression: every 5 minutes'],
  ['6 cron fields', { frequency: '0 0 0 * * *', start_date: inDays(-1), end_date: inDays(30) }, 'invalid cron expression: 0 0 0 * * *'],
  ['a cron without dates', { frequency: '0 0 * * *' }, 'start_date and end_date required for scheduled tasks'],
  ['a cron without end_date', { frequency: '0 0 * * *', start_date: inDays(-1) }, 'start_date and end_date required for scheduled tasks'],
  ['an end before the start', { frequency: '0 0 * * *', start_date: inDays(2), end_date: inDays(1) }, 'end_date must be greater than or equal to start_date'],
];

/** Issue 33: a schedule that can never run was saved by the catalog and stayed `scheduled` forever. */
describe('task schedules: checked wherever a task is written; ADHOC runs dated now (HTTP, embedded service)', function () {
  this.timeout(120_000);
  let svc: TestService;
  let admin: CatalogClient;
  let bed: TaskBed;
  let operator: string;

  const taskApi = (path: string, body: Record<string, unknown>): Promise<Reply> => svc.client().post(`/api/v1/task${path}`, { json: body, token: admin.token });
  const item = async (laui: string): Promise<Task> => (await admin.get({ item_laui: laui })).json as Task;
  const tasksNamed = async (name: string) =>
    ((await admin.search({ item_filter: { item_type: 'task', name, project_laui: bed.tree.project_laui } })).json as { items: unknown[] }).items;
  /** The reply of `request`, which must have written nothing to the log. */
  const writesNothing = async (request: () => Promise<Reply>): Promise<Reply> => {
    const before = await svc.service.eventStore.headPosition();
    const reply = await request();
    expect(await svc.service.eventStore.headPosition(), `${reply.status} ${reply.text}`).to.equal(before);
    return reply;
  };
  const expectRefused = (reply: Reply, detail: string): void => {
    expect(reply.status, reply.text).to.equal(422);
    expect(reply.json).to.deep.equal({ detail });
  };
  /** A task saved before every write checked schedules: its stream is given `changes` as the API once wrote them. */
  const appendOldChanges = async (laui: string, changes: Record<string, unknown>): Promise<void> => {
    const { version } = await item(laui);
    const { position } = await svc.service.eventStore.append(
      itemStream(laui),
      [{ type: 'ItemUpdated', data: { changes, version: version + 1, revision_laui: newLaui(new Date()) }, metadata: metadataFor(null, new Date(), 'old-log') }],
      'any',
    );
    expect(await svc.service.readModels.waitFor(position, 20_000)).to.equal(true);
  };

  before(async () => {
    svc = await startTestService();
    admin = catalogClient(svc, (await svc.login()).token);
    bed = await taskBed(admin, 'schedule-co', { name: 'c', content: {}, max_parallelism: 4 });
    operator = await admin.createOk({ item_type: 'operator', name: 'echo.operator', parent_laui: bed.tree.folders.operator, codeblock: { language: 'javascript', code: JS_ECHO } });
  });
  after(async () => svc?.stop());

  for (const [what, schedule, detail] of BAD_SCHEDULES) {
    it(`given ${what}, when written through catalog create, catalog validate or task run, then each answers 422 "${detail}" and nothing is written`, async () => {
      const name = `bad-${what.replace(/\W+/g, '-')}`;
      const body = { item_type: 'task', ...bed.taskBody(name, operator), ...schedule };
      expectRefused(await writesNothing(() => admin.create(body)), detail);
      expectRefused(await writesNothing(() => admin.post('/validate', body)), detail);
      expectRefused(await writesNothing(() => taskApi('/run', body)), detail);
      expect(await tasksNamed(name)).to.deep.equal([]);
    });

    it(`given a saved ADHOC task, when catalog update gives it ${what}, then 422 "${detail}" and the task is unchanged`, async () => {
      const laui = await admin.createOk({ item_type: 'task', ...bed.taskBody(`edited-${what.replace(/\W+/g, '-')}`, operator) });
      const before = await item(laui);
      expectRefused(await writesNothing(() => admin.post('/update', { item_laui: laui, ...schedule })), detail);
      expect(await item(laui)).to.deep.equal(before);
    });
  }

  it('given good schedules, when created, validated, updated and run, then all pass (the check refuses only what cannot run)', async () => {
    const scheduled = { frequency: '*/5 * * * *', start_date: inDays(-1), end_date: inDays(30) };
    const body = { item_type: 'task', ...bed.taskBody('good-schedule', operator), ...scheduled };
    expect((await admin.post('/validate', body)).status).to.equal(200);
    const laui = await admin.createOk(body);
    const same = { start_date: scheduled.start_date, end_date: scheduled.start_date };
    expect((await admin.post('/update', { item_laui: laui, frequency: '0 0 L * *', ...same })).status, 'end_date equal to start_date').to.equal(200);
    expect((await admin.post('/update', { item_laui: laui, frequency: 'ADHOC', start_date: null, end_date: null })).status).to.equal(200);
    const ran = await taskApi('/run', { item_type: 'task', ...bed.taskBody('good-cron-run', operator), frequency: '0 3 * * 1-5', start_date: inDays(-7), end_date: inDays(7) });
    expect(ran.status, ran.text).to.equal(200);
    // The run ends before the next test: its pick-up and end would land in that test's "writes nothing" window.
    await waitForItem<Task>(admin, (ran.json as { item_laui: string }).item_laui, (task) => ['success', 'error', 'fail', 'timeout'].includes(String(task.state)), 60_000);
  });

  it('given tasks saved before schedules were checked, when diagnosed, then the schedule blocks; a run is refused with the 422 and only an update that fixes it is taken', async () => {
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['legacy-minute-61', { frequency: '61 * * * *' }, 'invalid cron expression: 61 * * * *'],
      ['legacy-no-dates', { frequency: '0 0 * * *', start_date: null, end_date: null }, 'start_date and end_date required for scheduled tasks'],
    ];
    for (const [name, old, detail] of cases) {
      const laui = await admin.createOk({ item_type: 'task', ...bed.taskBody(name, operator), frequency: '0 0 * * *', start_date: inDays(-1), end_date: inDays(30) });
      await appendOldChanges(laui, old);
      expect(await item(laui)).to.include(old);

      const reply = await svc.client().get(`/api/v1/task/diagnose/${laui}`, { token: admin.token });
      expect(reply.status, reply.text).to.equal(200);
      const checks = reply.json as Record<string, { triggered: boolean; severity: string; title: string; details: string }>;
      expect(checks.schedule_invalid, name).to.include({ triggered: true, severity: 'blocking', title: 'Schedule invalid' });
      expect(checks.schedule_invalid?.details).to.include(detail);

      expectRefused(await writesNothing(() => taskApi('/run', { item_laui: laui })), detail);
      expectRefused(await writesNothing(() => admin.post('/update', { item_laui: laui, description: 'still broken' })), detail);
      const fixed = await admin.post('/update', { item_laui: laui, frequency: '0 0 * * *', start_date: inDays(-1), end_date: inDays(30) });
      expect(fixed.status, fixed.text).to.equal(200);
      const after = (await svc.client().get(`/api/v1/task/diagnose/${laui}`, { token: admin.token })).json as Record<string, { triggered: boolean }>;
      expect(after.schedule_invalid?.triggered).to.equal(false);
    }
  });

  describe('ADHOC logical_date (spec 2.4: defaults to the current UTC)', () => {
    const payload = { ds: '{{ds}}', ts: '{{ts}}' };
    const done = (laui: string, iteration: number) =>
      waitForItem<Task>(admin, laui, (task) => task.iteration === iteration && ['success', 'error', 'fail', 'timeout'].includes(task.state), 60_000);
    /** The finished run's logical_date and what its payload rendered. */
    const runOf = async (laui: string, iteration: number) => {
      const task = await done(laui, iteration);
      expect(task.state, JSON.stringify(task.last_run_output)).to.equal('success');
      return { logical: String(task.logical_date), output: task.last_run_output as { ds: string; ts: string } };
    };
    const rendered = (logical: string) => {
      const builtins = builtinVariables(logical, new Date());
      return { status: 'success', ds: builtins.ds, ts: builtins.ts };
    };

    it('given an ADHOC task first run for an explicit date, when it is run again without one, then the re-run is dated now and {{ds}}/{{ts}} render that date; an explicit date is kept', async () => {
      const first = await taskApi('/run', { item_type: 'task', ...bed.taskBody('adhoc-dates', operator), payload, logical_date: '2024-01-02T03:04:05Z' });
      expect(first.status, first.text).to.equal(200);
      const laui = (first.json as { item_laui: string }).item_laui;
      const explicit = await runOf(laui, 1);
      expect(explicit.logical).to.equal('2024-01-02T03:04:05Z');
      expect(explicit.output).to.deep.equal(rendered('2024-01-02T03:04:05Z'));

      const asked = Date.now();
      expect((await taskApi('/run', { item_laui: laui })).status).to.equal(200);
      const rerun = await runOf(laui, 2);
      expect(Date.parse(rerun.logical), `re-run dated ${rerun.logical}`).to.be.at.least(asked);
      expect(rerun.output).to.deep.equal(rendered(rerun.logical));

      const again = Date.now();
      expect((await taskApi('/multiple_tasks', { task_lauis: [laui] })).status).to.equal(200);
      const third = await runOf(laui, 3);
      expect(Date.parse(third.logical), `multiple_tasks run dated ${third.logical}`).to.be.at.least(again);
      expect(third.output).to.deep.equal(rendered(third.logical));

      expect((await taskApi('/run', { item_laui: laui, logical_date: '2023-05-06T07:08:09.250Z' })).status).to.equal(200);
      const fourth = await runOf(laui, 4);
      expect(fourth.logical).to.equal('2023-05-06T07:08:09.250Z');
      expect(fourth.output).to.deep.equal(rendered('2023-05-06T07:08:09.250Z'));
    });

    it('given a logical_date that is not a datetime, when a task is run with it, then 422 names the field and nothing is written', async () => {
      const laui = await admin.createOk({ item_type: 'task', ...bed.taskBody('adhoc-bad-date', operator), payload });
      for (const bad of ['garbage', 5, { toString: 'x' }]) {
        for (const body of [{ item_laui: laui, logical_date: bad }, { item_type: 'task', ...bed.taskBody('adhoc-bad-date-new', operator), logical_date: bad }]) {
          const reply = await writesNothing(() => taskApi('/run', body));
          expect(reply.status, reply.text).to.equal(422);
          expect((reply.json as { detail: Array<{ loc: string[] }> }).detail[0]?.loc).to.deep.equal(['body', 'logical_date']);
        }
      }
      expect(await tasksNamed('adhoc-bad-date-new')).to.deep.equal([]);
    });
  });
});
