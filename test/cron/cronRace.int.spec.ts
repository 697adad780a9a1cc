import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestService, type TestService } from '../support/testService.ts';
import { catalogClient, waitForItem } from '../support/catalogFixture.ts';
import { cronProject, DAY_MS, eventually, isoDay, utcMidnight, type CronProject, type CronStatus, type Item } from './cronFixture.ts';

type HistoryEntry = { changes?: Record<string, unknown> };

const cronLogLines = (svc: TestService): Array<Record<string, unknown>> => {
  const dir = join(svc.dataDir, 'logs', 'CRON');
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((file) =>
    readFileSync(join(dir, file), 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as Record<string, unknown>),
  );
};

describe('project cron across processes: two loops racing on one project, resume after restart', function () {
  this.timeout(240_000);
  let first: TestService;
  let second: TestService | null = null;
  let project: CronProject;

  before(async () => {
    first = await startTestService();
    project = await cronProject(first, (await first.login()).token, 'race-co');
  });
  after(async () => {
    await second?.stop({ keepData: true });
    await first.stop();
  });

  it('given two services on one data directory both running a loop for the project, when a week is due, then each logical date is dispatched exactly once', async () => {
    // Each embedded service keeps its heartbeats in memory, so each sees the other's cron as dead and runs its own loop.
    second = await startTestService({}, {}, first.dataDir);
    const services = [first, second];
    expect((await project.manage('START')).status).to.equal(200);
    // Both loops run before the week is due, so that they race on it (waited for: the second service
    // learns of the START through the shared log, as slowly as a loaded machine makes it).
    const loopOwners = async (): Promise<Set<string>> => {
      await Promise.all(services.map((svc) => svc.service.logger.flush()));
      return new Set(
        cronLogLines(first)
          .filter((line) => line.project_laui === project.tree.project_laui && String(line.message).startsWith('Cron loop '))
          .map((line) => String(String(line.message).split(' ')[2])),
      );
    };
    await eventually(loopOwners, (owners) => owners.size >= 2, 'a loop in each service');
    const task = await project.dailyTask('raced');
    const today = utcMidnight(new Date());
    await waitForItem<Item>(project.api, task, (item) => item.state === 'success' && item.iteration === 7, 60_000);
    // Then each loop makes the passes of two more intervals: a late second claim would be in the history by then.
    const token = project.api.token;
    const since = Date.now();
    for (const svc of services) {
      await eventually(
        async () => (await svc.client().get(`/api/v1/cron/status/${project.tree.project_laui}`, { token })).json as CronStatus,
        (status) => status.alive && Date.parse(String(status.latest_heartbeat)) >= since + 2000,
        'two more intervals of passes',
      );
    }

    const history = (await project.api.getPath(`/get/item_history?item_laui=${task}`)).json as HistoryEntry[];
    const claims = history.filter((entry) => entry.changes?.state === 'queued_for_connection');
    const pickups = history.filter((entry) => entry.changes?.state === 'running').map((entry) => String(entry.changes?.data_interval_start));
    const days = Array.from({ length: 7 }, (_, index) => new Date(today.getTime() - (7 - index) * DAY_MS));
    expect(claims).to.have.length(7);
    expect(pickups).to.deep.equal(days.map((day) => day.toISOString()));
    expect((await project.runOutputs(task)).map((output) => output.ds)).to.deep.equal(days.map(isoDay));
    expect(await project.item(task)).to.include({ iteration: 7, next_run_date: new Date(today.getTime() + DAY_MS).toISOString() });
    expect((await loopOwners()).size, 'both services ran a loop').to.be.at.least(2);
  });

  it('given a running cron, when every service stops and one starts again, then the cron resumes without a new START', async () => {
    await second?.stop({ keepData: true });
    second = null;
    await first.stop({ keepData: true });
    first = await startTestService({}, {}, first.dataDir);
    const api = catalogClient(first, (await first.login()).token);
    expect(((await api.get({ item_laui: project.tree.project_laui })).json as Item).folder_metadata).to.include({ cron_status: 'RUNNING' });
    const task = await api.createOk(project.dailyTaskBody('after-restart'));
    const done = await waitForItem<Item>(api, task, (item) => item.state === 'success' && item.iteration === 7, 60_000);
    expect(done.logical_date).to.equal(utcMidnight(new Date()).toISOString());
  });
});
