import { expect } from 'chai';
import { startTestService, type TestService } from '../support/testService.ts';
import { createUser } from '../support/catalogFixture.ts';
import { cronProject, type CronProject } from './cronFixture.ts';

const UNKNOWN = '65a0000000000000000000ff';
type Checks = Record<string, { triggered: boolean; severity: string; title: string; details: string }>;
type Entry = { diagnosed_at: string; diagnosed_by: string | null; triggered: string[]; checks: Checks };

describe('GET /task/diagnose/{task_laui}: checks, access and history', function () {
  this.timeout(60_000);
  let svc: TestService;
  let project: CronProject;
  let strangerToken: string;

  before(async () => {
    svc = await startTestService();
    const admin = await svc.login();
    project = await cronProject(svc, admin.token, 'diag-co');
    strangerToken = (await createUser(svc, admin.token, 'nosy')).token;
  });
  after(async () => svc.stop());

  it('given a task without a running cron, when diagnosed, then every check answers and the scheduler check blocks', async () => {
    const task = await project.dailyTask('idle');
    const reply = await project.diagnose(task);
    expect(reply.status, reply.text).to.equal(200);
    const checks = reply.json as Checks;
    // The spec's 13 checks and backfill_running (issue 36).
    expect(Object.keys(checks)).to.have.length(14);
    expect(checks.backfill_running).to.deep.include({ triggered: false, severity: 'info' });
    expect(checks.scheduler_not_running).to.deep.include({ triggered: true, severity: 'blocking', title: 'Scheduler not running' });
    expect(checks.worker_not_running?.title).to.equal('Celery not running (worker broker: in-process bus)');
    expect(Object.entries(checks).filter(([, check]) => check.triggered).map(([key]) => key)).to.deep.equal(['scheduler_not_running']);
  });

  it('given a task under a PAUSE workflow, when diagnosed, then the paused workflow is reported as blocking (issue 19)', async () => {
    const paused = await project.api.createOk({ item_type: 'folder.workflow', name: 'paused-wf', parent_laui: project.tree.folders.workflow, folder_metadata: { state: 'PAUSE' } });
    const task = await project.dailyTask('under-pause', { parent_laui: paused });
    const reply = await project.diagnose(task);
    expect(reply.status, reply.text).to.equal(200);
    const checks = reply.json as Checks;
    expect(checks.workflow_paused).to.deep.include({ triggered: true, severity: 'blocking', title: 'Workflow paused' });
    expect(Object.entries(checks).filter(([, check]) => check.triggered && check.severity === 'blocking').map(([key]) => key)).to.include('workflow_paused');
  });

  it('given repeated and changed diagnoses, when the history is read, then it holds each distinct result once, oldest first', async () => {
    const operator = await project.api.createOk({ item_type: 'operator', name: 'doomed.operator', parent_laui: project.tree.folders.operator, codeblock: { language: 'javascript', code: 'export function run() {}' } });
    const task = await project.dailyTask('watched', { operator_laui: operator });
    expect((await project.diagnose(task)).status).to.equal(200);
    expect((await project.diagnose(task)).status).to.equal(200);
    expect((await svc.client().post(`/api/v1/task/update/${task}`, { json: { user_set_state: 'cancel' }, token: project.api.token })).status).to.equal(200);
    expect((await project.api.post('/delete', { item_laui: operator })).status).to.equal(200);
    const changed = (await project.diagnose(task)).json as Checks;
    expect(changed.user_cancellation_requested?.triggered).to.equal(true);
    expect(changed.required_item_deleted).to.include({ triggered: true, details: `operator item not found: ${operator}` });

    const history = await project.diagnose(task, '?history=true');
    expect(history.status, history.text).to.equal(200);
    const entries = history.json as Entry[];
    expect(entries.map((entry) => entry.triggered)).to.deep.equal([
      ['scheduler_not_running'],
      ['required_item_deleted', 'scheduler_not_running', 'user_cancellation_requested'],
    ]);
    expect(entries[1]?.checks.required_item_deleted?.triggered).to.equal(true);
    expect(entries[0]?.diagnosed_by).to.be.a('string');
    expect(Date.parse(entries[0]?.diagnosed_at ?? '')).to.be.at.most(Date.parse(entries[1]?.diagnosed_at ?? ''));
    // Reading the history records nothing.
    expect(((await project.diagnose(task, '?history=true')).json as Entry[]).length).to.equal(2);
  });

  it('given an unknown task, a non-task, a stranger or a bad query, when diagnosed, then 404, 404, 403 or 422', async () => {
    const task = await project.dailyTask('guarded');
    expect([(await project.diagnose(UNKNOWN)).status, (await project.diagnose(UNKNOWN)).json]).to.deep.equal([404, { detail: 'Item not found' }]);
    expect((await project.diagnose(project.tree.project_laui)).status).to.equal(404);
    const denied = await svc.client().get(`/api/v1/task/diagnose/${task}`, { token: strangerToken });
    expect([denied.status, denied.json]).to.deep.equal([403, { detail: 'Access denied' }]);
    expect((await project.diagnose(task, '?history=yes')).status).to.equal(422);
    expect((await project.diagnose('nope')).status).to.equal(422);
  });
});
