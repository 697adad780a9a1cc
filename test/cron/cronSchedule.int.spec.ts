import { expect } from 'chai';
import { startTestService, type TestService } from '../support/testService.ts';
import { waitForItem } from '../support/catalogFixture.ts';
import { cronProject, DAY_MS, isoDay, sleep, utcMidnight, type CronProject, type Item } from './cronFixture.ts';

describe('project cron: a daily task catches up a week, then waits; STOP stops dispatch', function () {
  this.timeout(90_000);
  let svc: TestService;
  let project: CronProject;

  before(async () => {
    svc = await startTestService();
    project = await cronProject(svc, (await svc.login()).token, 'cron-co');
  });
  after(async () => svc.stop());

  it('given a daily task that started a week ago, when the cron is started, then it runs seven times in logical_date order and then waits for tomorrow', async () => {
    const task = await project.dailyTask('daily');
    const today = utcMidnight(new Date());
    const started = await project.manage('START');
    expect(started.status, started.text).to.equal(200);
    expect(started.json).to.deep.equal({
      success: true,
      message: `Cron started successfully for project ${project.tree.project_laui}`,
      project_laui: project.tree.project_laui,
      action: 'START',
    });

    const done = await waitForItem<Item>(project.api, task, (item) => item.state === 'success' && item.next_run_date === new Date(today.getTime() + DAY_MS).toISOString(), 60_000);
    expect(done).to.include({ iteration: 7, logical_date: today.toISOString() });
    const days = Array.from({ length: 7 }, (_, index) => isoDay(new Date(today.getTime() - (7 - index) * DAY_MS)));
    expect((await project.runOutputs(task)).map((output) => output.ds)).to.deep.equal(days);
    const running = await project.item(project.tree.project_laui);
    expect(running.folder_metadata).to.include({ cron_status: 'RUNNING', stop_date: null, error: null });
    expect(running.folder_metadata?.start_date).to.be.a('string');

    // Waits: the passes of the next three intervals (told by the loop's own heartbeats, alive) dispatch nothing.
    const status = await project.passesAfter(Date.now(), 3000);
    expect(status).to.include({ cron_status: 'RUNNING', alive: true, interval_seconds: 1 });
    expect(await project.item(task)).to.include({ iteration: 7, state: 'success' });
    const diagnosis = (await project.diagnose(task)).json as Record<string, { triggered: boolean }>;
    expect(Object.entries(diagnosis).filter(([, check]) => check.triggered).map(([key]) => key)).to.deep.equal(['next_run_in_future']);
  });

  it('given a running cron, when stopped, then the status is STOPPED and a task made due again is not dispatched', async () => {
    const stopped = await project.manage('STOP');
    expect(stopped.status, stopped.text).to.equal(200);
    expect(stopped.json).to.deep.include({ success: true, message: `Cron stopped successfully for project ${project.tree.project_laui}`, action: 'STOP' });
    const metadata = (await project.item(project.tree.project_laui)).folder_metadata ?? {};
    expect(metadata).to.include({ cron_status: 'STOPPED', error: null });
    expect(metadata.stop_date).to.be.a('string');

    const task = await project.dailyTask('after-stop');
    await sleep(2500);
    const untouched = await project.item(task);
    expect(untouched).to.include({ state: 'scheduled' });
    expect(untouched.iteration ?? 0).to.equal(0);
    const diagnosis = (await project.diagnose(task)).json as Record<string, { triggered: boolean; details: string }>;
    expect(diagnosis.scheduler_not_running).to.include({ triggered: true });
    expect(diagnosis.scheduler_not_running?.details).to.include('STOPPED');
  });

  it('given a stopped cron, when started again, then the task made due meanwhile catches up too', async () => {
    const restarted = await project.manage('START');
    expect(restarted.status, restarted.text).to.equal(200);
    const today = utcMidnight(new Date());
    const task = (await project.api.search({ item_filter: { item_type: 'task', name: 'after-stop' } })).json as { items: Array<{ laui: string }> };
    const laui = task.items[0]?.laui ?? '';
    const done = await waitForItem<Item>(project.api, laui, (item) => item.iteration === 7 && item.state === 'success', 60_000);
    expect(done.logical_date).to.equal(today.toISOString());
  });
});
