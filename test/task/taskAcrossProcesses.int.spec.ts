import { expect } from 'chai';
import { startTestService, type TestService } from '../support/testService.ts';
import { catalogClient, waitForItem } from '../support/catalogFixture.ts';
import { cronProject, DAY_MS, isoDay, utcMidnight, type CronProject, type Item } from '../cron/cronFixture.ts';

/**
 * Two services on one data directory: each learns of the other's appends by polling the log (every
 * 500 ms), so each one's read model lags what the other just wrote. A run must not take its
 * logical date from that lagging copy: the payload's {{ds}}, the data interval and the next
 * logical date all come from the task's stream.
 */
describe('task runs across processes: the run reads the task from its stream, not from a lagging read model', function () {
  this.timeout(60_000);
  let first: TestService;
  let second: TestService;
  let project: CronProject;
  let firstToken: string;

  before(async () => {
    first = await startTestService();
    firstToken = (await first.login()).token;
    project = await cronProject(first, firstToken, 'across-co');
    second = await startTestService({}, {}, first.dataDir);
  });
  after(async () => {
    await second.stop({ keepData: true });
    await first.stop();
  });

  it('given a logical date changed by one service, when the other runs the task at once, then the run is for the new date', async () => {
    const task = await project.dailyTask('moved');
    const secondToken = (await second.login()).token;
    const secondApi = catalogClient(second, secondToken);
    await waitForItem<Item>(secondApi, task, (item) => item.laui === task);
    // The second service's read model still holds the first logical date when it runs the task (it
    // reads the log again on its next poll, or once it appends itself: the run does that, so the
    // run's own reads after its first commit see the new date). Should a poll fall between the
    // update and the check, the update is made again with another date.
    let moved = new Date(0);
    let lagging = false;
    for (let attempt = 0; attempt < 5 && !lagging; attempt += 1) {
      moved = new Date(utcMidnight(new Date()).getTime() - (3 + attempt) * DAY_MS);
      const updated = await first.client().post(`/api/v1/task/update/${task}`, { json: { logical_date: moved.toISOString() }, token: firstToken });
      expect(updated.status, updated.text).to.equal(200);
      lagging = ((await secondApi.get({ item_laui: task })).json as Item).logical_date !== moved.toISOString();
    }
    expect(lagging, 'the second read model lags').to.equal(true);
    const run = await second.client().post('/api/v1/task/run', { json: { item_laui: task }, token: secondToken });
    expect(run.status, run.text).to.equal(200);

    const done = await waitForItem<Item>(secondApi, task, (item) => item.state === 'success' && item.iteration === 1);
    expect(done.last_run_output).to.deep.equal({ status: 'success', ds: isoDay(moved) });
    expect(done).to.include({ data_interval_start: moved.toISOString(), logical_date: new Date(moved.getTime() + DAY_MS).toISOString() });
  });

  it('given a logical date changed by one service while the other runs the task, when the run succeeds, then the next logical date follows the changed one', async () => {
    const api = catalogClient(first, firstToken);
    const slow = await api.createOk({
      item_type: 'operator',
      name: 'slow-ds.operator',
      parent_laui: project.tree.folders.operator,
      codeblock: {
        language: 'javascript',
        code: "export async function run() { await new Promise((resolve) => setTimeout(resolve, 1500)); }\nexport function check_completion() { return { status: 'success' }; }\n",
      },
    });
    const task = await project.dailyTask('moved-while-running', { operator_laui: slow });
    const secondToken = (await second.login()).token;
    const secondApi = catalogClient(second, secondToken);
    await waitForItem<Item>(secondApi, task, (item) => item.laui === task);
    const run = await second.client().post('/api/v1/task/run', { json: { item_laui: task }, token: secondToken });
    expect(run.status, run.text).to.equal(200);
    await waitForItem<Item>(api, task, (item) => item.state === 'running');

    // The second service's last look at the stream is its own pickup: this change is after it.
    const moved = new Date(utcMidnight(new Date()).getTime() - 9 * DAY_MS);
    const updated = await first.client().post(`/api/v1/task/update/${task}`, { json: { logical_date: moved.toISOString() }, token: firstToken });
    expect(updated.status, updated.text).to.equal(200);

    const done = await waitForItem<Item>(api, task, (item) => item.state === 'success' && item.iteration === 1);
    expect(done.logical_date).to.equal(new Date(moved.getTime() + DAY_MS).toISOString());
  });
});
