import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sessionLogFile } from '../../ops/logging/sessionLogFile.ts';
import { startTestService, type TestService } from '../support/testService.ts';
import { taskBed, type TaskBed } from '../support/taskBed.ts';
import { catalogClient, waitForItem, type CatalogClient } from '../support/catalogFixture.ts';

const JS_QUICK = `
export function run() { return null; }
export function check_completion() { return { status: 'success' }; }
`;

const PY_ACTION = `
def run(connection, action_variables, context):
    return {"session_id": context["session_id"]}
`;

const OBJECT_ID = /^[0-9a-f]{24}$/;

/** Issue 19: the README promises logs/sessions/<YYYY-MM-DD>/<HHMMSS>.jsonl named from the session's start second. */
describe('session log files of runs (HTTP, embedded service)', function () {
  this.timeout(60_000);
  let svc: TestService;
  let admin: CatalogClient;
  let bed: TaskBed;
  const logs = () => join(svc.dataDir, 'logs');

  /** The lines of the session in the file its id names; fails when that file is `other.jsonl`. */
  const linesOf = (sessionId: string): Array<Record<string, unknown>> => {
    const { dir, file } = sessionLogFile(logs(), sessionId, new Date().toISOString());
    expect(file).to.match(/^\d{6}\.jsonl$/);
    const path = join(dir, file);
    expect(existsSync(path), path).to.equal(true);
    return readFileSync(path, 'utf8')
      .split('\n')
      .filter((line) => line.includes(sessionId))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  };

  before(async () => {
    svc = await startTestService();
    admin = catalogClient(svc, (await svc.login()).token);
    bed = await taskBed(admin, 'sessions-co', { name: 'c', content: {}, max_parallelism: 2 });
  });
  after(async () => svc.stop());

  it('given a task run, when it ends, then its session id is an ObjectId and its lines are in the file of the second it started', async () => {
    const operator = await admin.createOk({ item_type: 'operator', name: 'quick.operator', parent_laui: bed.tree.folders.operator, codeblock: { language: 'javascript', code: JS_QUICK } });
    const reply = await svc.client().post('/api/v1/task/run', { json: { item_type: 'task', ...bed.taskBody('logged', operator) }, token: admin.token });
    expect(reply.status, reply.text).to.equal(200);
    const task = await waitForItem<Record<string, unknown> & { state: string }>(admin, (reply.json as { item_laui: string }).item_laui, (item) => item.state === 'success', 30_000);
    const sessionId = String(task.last_run_session_id);
    expect(sessionId).to.match(OBJECT_ID);
    await svc.service.logger.flush();
    const lines = linesOf(sessionId);
    expect(lines.map((line) => line.step)).to.include.members(['pickup', 'finish']);
    const days = readdirSync(join(logs(), 'sessions'));
    for (const day of days) expect(readdirSync(join(logs(), 'sessions', day))).not.to.include('other.jsonl');
  });

  it('given an action run, when it ends, then its session id is an ObjectId and its line is in the file of the second it started', async () => {
    const folder = await admin.createOk({ item_type: 'folder.workflow', name: 'actions', parent_laui: bed.tree.folders.workflow });
    const action = await admin.createOk({
      item_type: 'action',
      name: 'sid.action',
      parent_laui: folder,
      project_laui: bed.tree.project_laui,
      account_laui: bed.tree.account_laui,
      codeblock: { language: 'python', code: PY_ACTION },
    });
    const reply = await svc.client().post('/api/v1/action/run', { json: { item_type: 'action', item_laui: action }, token: admin.token });
    expect(reply.status, reply.text).to.equal(200);
    const sessionId = String((reply.json as { result: { session_id: string } }).result.session_id);
    expect(sessionId).to.match(OBJECT_ID);
    await svc.service.logger.flush();
    expect(linesOf(sessionId)).to.have.length(1);
  });
});
