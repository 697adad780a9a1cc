import { expect } from 'chai';
import { startTestService, type TestService } from '../support/testService.ts';
import { createUser, waitForItem } from '../support/catalogFixture.ts';
import { cronProject, DAY_MS, eventually, utcMidnight, type CronProject } from './cronFixture.ts';

const UNKNOWN = '65a0000000000000000000ff';

describe('POST /cron/manage: bad input, access, idempotence; paused workflows, passed end dates, failing pre-actions', function () {
  this.timeout(180_000);
  let svc: TestService;
  let project: CronProject;
  let stranger: { laui: string; token: string };

  before(async () => {
    svc = await startTestService();
    const admin = await svc.login();
    project = await cronProject(svc, admin.token, 'manage-co');
    stranger = await createUser(svc, admin.token, 'stranger');
  });
  after(async () => svc.stop());

  it('given a started cron, when started again, then 409; when stopped twice, then 200 both times and STOPPED', async () => {
    expect((await project.manage('START')).status).to.equal(200);
    const again = await project.manage('START');
    expect(again.status).to.equal(409);
    expect(again.json).to.deep.equal({ detail: 'Cron is already running for this project' });
    expect((await project.manage('STOP')).status).to.equal(200);
    const twice = await project.manage('STOP');
    expect(twice.status).to.equal(200);
    expect(twice.json).to.deep.include({ success: true, action: 'STOP' });
    expect((await project.item(project.tree.project_laui)).folder_metadata).to.include({ cron_status: 'STOPPED' });
  });

  it('given a project whose cron never ran, when stopped, then 200 and no status is written', async () => {
    const other = await cronProject(svc, project.api.token, 'never-co');
    const reply = await other.manage('STOP');
    expect(reply.status, reply.text).to.equal(200);
    expect((await other.item(other.tree.project_laui)).folder_metadata).to.deep.equal({});
  });

  it('given an unknown project, a non-project item or a stranger, when managed, then 404 or 403', async () => {
    const unknown = await project.manage('START', { project_laui: UNKNOWN });
    expect([unknown.status, unknown.json]).to.deep.equal([404, { detail: 'Item not found' }]);
    const folder = await project.manage('START', { project_laui: project.workflow });
    expect([folder.status, folder.json]).to.deep.equal([404, { detail: 'Item not found' }]);
    const denied = await project.manage('START', {}, stranger.token);
    expect([denied.status, denied.json]).to.deep.equal([403, { detail: 'Access denied' }]);
  });

  it('given actions that are strings but not START or STOP, when managed, then 400 Invalid action (case-sensitive)', async () => {
    for (const action of ['start', 'PAUSE', 'Stop', '']) {
      const reply = await project.manage(action);
      expect([reply.status, reply.json], action).to.deep.equal([400, { detail: `Invalid action: ${action}` }]);
    }
  });

  it('given a malformed body, when managed, then 422 lists every problem', async () => {
    const extra = await project.manage('START', { force: true });
    expect(extra.status).to.equal(422);
    expect(extra.json).to.deep.equal({ detail: [{ type: 'extra_forbidden', loc: ['body', 'force'], msg: 'Extra inputs are not permitted', input: true }] });
    const wrongType = await project.manage(1);
    expect(wrongType.status).to.equal(422);
    expect((wrongType.json as { detail: Array<Record<string, unknown>> }).detail).to.deep.equal([
      { type: 'enum', loc: ['body', 'action'], msg: "Input should be 'START' or 'STOP'", input: 1, ctx: { expected: "'START' or 'STOP'" } },
    ]);
    const missing = await svc.client().post('/api/v1/cron/manage', { json: { project_laui: 'nope' }, token: project.api.token });
    expect(missing.status).to.equal(422);
    expect((missing.json as { detail: Array<{ type: string; loc: unknown[] }> }).detail.map((entry) => [entry.type, entry.loc])).to.have.deep.members([
      ['value_error', ['body', 'project_laui']],
      ['missing', ['body', 'action']],
    ]);
  });

  it('given due tasks under a paused workflow or past their end date, when the cron runs, then none is dispatched and diagnose says why', async () => {
    const paused = await project.api.createOk({ item_type: 'folder.workflow', name: 'paused', parent_laui: project.tree.folders.workflow, folder_metadata: { state: 'PAUSE' } });
    const inPause = await project.dailyTask('in-paused-workflow', { parent_laui: paused });
    // Ten days ago from 01:00 to 12:00: its first run would have been due at the following midnight, after end_date.
    const tenDaysAgo = utcMidnight(new Date(Date.now() - 10 * DAY_MS));
    const ended = await project.dailyTask('ended', {
      start_date: new Date(tenDaysAgo.getTime() + 3600 * 1000).toISOString(),
      end_date: new Date(tenDaysAgo.getTime() + 12 * 3600 * 1000).toISOString(),
    });
    expect((await project.manage('START')).status).to.equal(200);
    // The first pass that sees them initialises their next_run_date; two intervals of passes more, and none dispatched them.
    for (const laui of [inPause, ended]) await waitForItem(project.api, laui, (item) => typeof item.next_run_date === 'string', 60_000);
    await project.passesAfter(Date.now(), 2000);
    for (const laui of [inPause, ended]) {
      const task = await project.item(laui);
      expect(task.state, String(task.name)).to.equal('scheduled');
      expect(task.iteration ?? 0).to.equal(0);
      expect(task.next_run_date, 'initialised at first sight').to.be.a('string');
    }
    const ready = await project.api.getPath(`/get/tasks_ready_to_run/${project.tree.project_laui}`);
    const readyNames = (ready.json as Array<{ name: string }>).map((task) => task.name);
    expect(readyNames).not.to.include('in-paused-workflow');
    const diagnosis = (await project.diagnose(ended)).json as Record<string, { triggered: boolean; severity: string; title: string }>;
    expect(diagnosis.end_date_passed).to.include({ triggered: true, severity: 'blocking', title: 'End date passed' });
    expect(diagnosis.scheduler_not_running?.triggered).to.equal(false);
    expect((await project.manage('STOP')).status).to.equal(200);
  });

  it('given a due task whose pre-action returns false, when the cron runs, then the run is skipped once, the task is back to scheduled and diagnose says why', async () => {
    const gate = await project.api.createOk({
      item_type: 'action',
      name: 'gate.action',
      parent_laui: project.tree.folders.action,
      project_laui: project.tree.project_laui,
      account_laui: project.tree.account_laui,
      codeblock: { language: 'javascript', code: 'export function run() { return false; }' },
    });
    const task = await project.dailyTask('gated', { actions: { create_actions: [], pre_actions: [{ laui: gate, action_variables: {} }], running_actions: [], post_actions: [] } });
    expect((await project.manage('START')).status).to.equal(200);
    // The pass that claims it runs the pre-action (a process) and releases the claim; the passes of two
    // more intervals leave it alone (re-checked after a minute). Waited for, however long the machine takes.
    await eventually(() => project.states(task), (states) => states.includes('scheduled'), 'the claim released');
    await project.passesAfter(Date.now(), 2000);
    expect((await project.manage('STOP')).status).to.equal(200);
    const item = await project.item(task);
    expect(item.state).to.equal('scheduled');
    expect(item.iteration ?? 0).to.equal(0);
    expect(await project.states(task), 'claimed once, released once (re-checked after a minute)').to.deep.equal(['queued_for_connection', 'scheduled']);
    const diagnosis = (await project.diagnose(task)).json as Record<string, { triggered: boolean; details: string }>;
    expect(diagnosis.pre_action_failed).to.include({ triggered: true, details: 'Failed pre-actions: gate.action (failed)' });
  });
});
