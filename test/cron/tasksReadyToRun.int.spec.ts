import { expect } from 'chai';
import { startTestService, type TestService } from '../support/testService.ts';
import { createUser } from '../support/catalogFixture.ts';
import { cronProject, DAY_MS, type CronProject } from './cronFixture.ts';

const UNKNOWN = '65a0000000000000000000ff';

describe('GET /catalog/get/tasks_ready_to_run/{project_laui} (spec 4.3)', function () {
  this.timeout(60_000);
  let svc: TestService;
  let project: CronProject;
  let strangerToken: string;
  const iso = (offsetMs: number) => new Date(Date.now() + offsetMs).toISOString();

  before(async () => {
    svc = await startTestService();
    const admin = await svc.login();
    project = await cronProject(svc, admin.token, 'ready-co');
    strangerToken = (await createUser(svc, admin.token, 'outsider')).token;
  });
  after(async () => svc.stop());

  it('given tasks on each side of every rule, when listed, then exactly the ready ones come back as catalog items', async () => {
    const paused = await project.api.createOk({ item_type: 'folder.workflow', name: 'paused', parent_laui: project.tree.folders.workflow, folder_metadata: { state: 'PAUSE' } });
    const past = { start_date: iso(-7 * DAY_MS), logical_date: iso(-DAY_MS) };
    const retry = { state: 'error', total_retries: 3, retry_number: 1, retry_interval: 1 };
    const cases: Array<[string, Record<string, unknown>, boolean]> = [
      ['normal-scheduled', past, true],
      ['normal-success', { ...past, state: 'success' }, true],
      ['logical-in-future', { ...past, state: 'success', logical_date: iso(DAY_MS) }, false],
      ['retry-due', { ...past, ...retry, last_run_date: iso(-120_000) }, true],
      ['retry-too-soon', { ...past, ...retry, last_run_date: iso(-10_000) }, false],
      ['retries-exhausted', { ...past, ...retry, retry_number: 3, last_run_date: iso(-120_000) }, false],
      ['cancel-requested', { ...past, user_set_state: 'cancel' }, false],
      ['paused-workflow', { ...past, parent_laui: paused }, false],
      ['not-started', { ...past, start_date: iso(DAY_MS) }, false],
      ['past-end-date', { ...past, end_date: iso(-2 * DAY_MS) }, false],
      ['running', { ...past, state: 'running' }, false],
      ['adhoc', { frequency: 'ADHOC', start_date: null, end_date: null, logical_date: iso(-DAY_MS) }, false],
      ['deleted', past, false],
    ];
    const lauis = new Map<string, string>();
    for (const [name, fields] of cases) lauis.set(name, await project.dailyTask(name, fields));
    expect((await project.api.post('/delete', { item_laui: lauis.get('deleted') })).status).to.equal(200);

    const reply = await project.api.getPath(`/get/tasks_ready_to_run/${project.tree.project_laui}`);
    expect(reply.status, reply.text).to.equal(200);
    const items = reply.json as Array<Record<string, unknown>>;
    expect(items.map((item) => item.name)).to.deep.equal(cases.filter(([, , ready]) => ready).map(([name]) => name));
    expect(items[0]).to.include({ laui: lauis.get('normal-scheduled'), item_type: 'task', project_laui: project.tree.project_laui });
    expect(items[0]).not.to.have.any.keys('_position', 'is_deleted', 'created_seq');
  });

  it('given a scheduled task just created and a cron never started, when listed, then it is ready: logical_date and next_run_date were set at creation (issue 19)', async () => {
    const start = new Date(Date.UTC(2024, 0, 10, 13, 45));
    const laui = await project.dailyTask('fresh-daily', { start_date: start.toISOString(), end_date: iso(30 * DAY_MS) });
    const created = await project.item(laui);
    // Floored to the daily granularity (midnight of start_date); the first fire at or after start_date is the next midnight.
    expect(created).to.include({ logical_date: '2024-01-10T00:00:00.000Z', next_run_date: '2024-01-11T00:00:00.000Z' });
    const hourly = await project.dailyTask('fresh-hourly', { frequency: '30 * * * *', start_date: start.toISOString(), end_date: iso(30 * DAY_MS) });
    expect(await project.item(hourly)).to.include({ logical_date: '2024-01-10T13:00:00.000Z', next_run_date: '2024-01-10T14:30:00.000Z' });
    expect((await project.item(project.tree.project_laui)).folder_metadata?.cron_status ?? null).to.equal(null);
    const reply = await project.api.getPath(`/get/tasks_ready_to_run/${project.tree.project_laui}`);
    expect(reply.status, reply.text).to.equal(200);
    expect((reply.json as Array<{ laui: string }>).map((item) => item.laui)).to.include.members([laui, hourly]);
  });

  it('given a stranger, an unknown project or a malformed LAUI, when listed, then 403, 404 or 422', async () => {
    const denied = await svc.client().get(`/api/v1/catalog/get/tasks_ready_to_run/${project.tree.project_laui}`, { token: strangerToken });
    expect([denied.status, denied.json]).to.deep.equal([403, { detail: 'Access denied' }]);
    const unknown = await project.api.getPath(`/get/tasks_ready_to_run/${UNKNOWN}`);
    expect([unknown.status, unknown.json]).to.deep.equal([404, { detail: `Item not found with laui: ${UNKNOWN}` }]);
    const malformed = await project.api.getPath('/get/tasks_ready_to_run/not-a-laui');
    expect(malformed.status).to.equal(422);
  });
});
