import { expect } from 'chai';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findSessionLogFile } from '../../ops/logging/sessionLogFile.ts';
import { LOG_CATEGORIES } from '../../shared/ports/Logger.ts';
import { startTestService, type TestService } from '../support/testService.ts';
import { taskBed, type TaskBed } from '../support/taskBed.ts';
import { catalogClient, waitForItem, type CatalogClient } from '../support/catalogFixture.ts';
import { EXECUTE_TASK } from '../../command-side/task/taskDeps.ts';
import { newSessionId } from '../../shared/ids.ts';

type Line = Record<string, unknown>;
type Task = Record<string, unknown> & { state: string };

const PY_PRINTS = `
import sys
print("module loaded")
def run(connection, payload, context):
    print("hello from run")
    print("careful: " + connection["password"], file=sys.stderr)
def check_completion(connection, payload, context):
    print("checked")
    return {"status": "success"}
def finish(connection, payload, context):
    print("finished")
`;

const JS_PRINTS = `
console.log('module loaded');
export function run(connection) { console.log('hello from run'); console.error('careful: ' + connection.password); }
export function check_completion() { console.log('checked'); return { status: 'success' }; }
export function finish() { console.log('finished'); }
`;

/** Prints the time it printed at, then sleeps: its line must be in the session file within 1 s while it still runs. */
/** Prints, then waits an hour: the test cancels it once it has seen the line. */
const PY_LIVE = `
import time
def run(connection, payload, context):
    print("printed at %d" % int(time.time() * 1000))
    time.sleep(3600)
`;

const PY_FLOOD = `
def run(connection, payload, context):
    for i in range(100000):
        print(i)
`;

const PASSWORD = 'pa55-w0rd-never-logged';

describe('run output in the session logs (HTTP, embedded service, real operators)', function () {
  this.timeout(120_000);
  let svc: TestService;
  let admin: CatalogClient;
  let bed: TaskBed;
  const logs = () => join(svc.dataDir, 'logs');

  const operator = (name: string, language: string, code: string) =>
    admin.createOk({ item_type: 'operator', name: `${name}.operator`, parent_laui: bed.tree.folders.operator, codeblock: { language, code } });
  const runNew = async (name: string, operatorLaui: string): Promise<string> => {
    const reply = await svc.client().post('/api/v1/task/run', { json: { item_type: 'task', ...bed.taskBody(name, operatorLaui) }, token: admin.token });
    expect(reply.status, reply.text).to.equal(200);
    return (reply.json as { item_laui: string }).item_laui;
  };
  /** The session's lines in its file (the file is shared with the sessions of the same second). */
  const sessionLines = (sessionId: string): Line[] => {
    const file = findSessionLogFile(logs(), sessionId);
    if (file === null) return [];
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line.includes(sessionId))
      .map((line) => JSON.parse(line) as Line)
      .filter((line) => line.session_id === sessionId);
  };
  /** A run to its end: the task's session and its lines once the end line is written. */
  const ended = async (laui: string, states: string[]) => {
    const task = await waitForItem<Task>(admin, laui, (item) => states.includes(item.state), 30_000);
    const sessionId = String(task.last_run_session_id ?? task.session_id);
    await svc.service.logger.flush();
    return { task, sessionId, lines: sessionLines(sessionId) };
  };

  before(async () => {
    svc = await startTestService({ REAPER_INTERVAL_MS: '200' });
    admin = catalogClient(svc, (await svc.login()).token);
    bed = await taskBed(admin, 'output-co', { name: 'c', content: { host: 'db.example', password: PASSWORD }, max_parallelism: 8 });
    await admin.createOk({ item_type: 'config', name: 'system', parent_laui: bed.tree.folders.config, config_type: 'system', content: { check_completion_timeout_seconds: 2 } });
  });
  after(async () => svc.stop());

  it('given a started service, when its logs root is listed, then it holds the six category folders and the session index', () => {
    expect(readdirSync(logs())).to.include.members([...LOG_CATEGORIES, 'sessions']);
    expect([...LOG_CATEGORIES].sort()).to.deep.equal(['API', 'CELERY', 'CRON', 'PERFORMANCE', 'TASK', 'TASK_HISTORY']);
  });

  for (const [language, code] of [['python', PY_PRINTS], ['javascript', JS_PRINTS]] as const) {
    it(`given a ${language} task that prints in its steps and to stderr, when it runs, then its session holds each line with the run's fields, the connection's secret masked, and ends with the end line`, async () => {
      const laui = await runNew(`prints-${language}`, await operator(`prints-${language}`, language, code));
      const { task, sessionId, lines } = await ended(laui, ['success']);
      const output = lines.filter((line) => typeof line.stream === 'string');
      // Each stream's lines in order (stdout and stderr are read apart: their interleaving is as read).
      expect(output.filter((line) => line.stream === 'stdout').map((line) => [line.level, line.step, line.message])).to.deep.equal([
        ['info', 'load', 'module loaded'],
        ['info', 'run', 'hello from run'],
        ['info', 'check_completion', 'checked'],
        ['info', 'finish', 'finished'],
      ]);
      expect(output.filter((line) => line.stream === 'stderr').map((line) => [line.level, line.step, line.message])).to.deep.equal([['error', 'run', 'careful: ********']]);
      for (const line of output) {
        expect(line).to.include({ category: 'TASK', session_id: sessionId, task_laui: laui, task_name: `prints-${language}`, logical_date: task.logical_date });
        expect(Date.parse(String(line.timestamp))).to.be.above(0);
      }
      expect(JSON.stringify(lines)).not.to.include(PASSWORD);
      // The service's lines of the run are in the same session: pickup (running), then the end line, last.
      expect(lines.find((line) => line.step === 'pickup')).to.include({ category: 'CELERY', state: 'running' });
      const last = lines.at(-1);
      expect(last).to.include({ session_end: true, category: 'TASK_HISTORY', step: 'finish', status: 'success', level: 'info' });
      expect(last?.duration_seconds).to.be.a('number');
      expect(lines.filter((line) => line.session_end === true)).to.have.length(1);
    });
  }

  it('given a task that prints, then waits, when it runs, then its line is in the session file while the task still runs', async () => {
    const laui = await runNew('live', await operator('live', 'python', PY_LIVE));
    const running = await waitForItem<Task>(admin, laui, (item) => item.state === 'running' && typeof item.last_run_session_id === 'string', 60_000);
    const sessionId = String(running.last_run_session_id);
    // The task waits an hour after printing: a line seen now was written while it ran (how soon is the bench's business).
    let seen: Line | undefined;
    const deadline = Date.now() + 60_000;
    while (!seen && Date.now() < deadline) {
      seen = sessionLines(sessionId).find((line) => String(line.message).startsWith('printed at'));
      if (!seen) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(seen, 'the printed line').to.not.equal(undefined);
    const now = (await admin.get({ item_laui: laui })).json as Task;
    expect(now.state).to.equal('running');
    expect((await svc.client().post(`/api/v1/task/update/${laui}`, { json: { user_set_state: 'cancel' }, token: admin.token })).status).to.equal(200);
    await waitForItem<Task>(admin, laui, (item) => item.state === 'cancelled', 60_000);
  });

  it('given runs that raise, never complete, are cancelled and cannot load, when they end, then each session\'s last line is its end line with its status', async () => {
    const raising = await operator('raises', 'python', 'def run(c, p, x):\n    print("about to fail")\n    raise ValueError("boom")\n');
    const endless = await operator('endless', 'javascript', 'export function run() { return null; }\nexport function check_completion() { console.log("still going"); return { status: "running" }; }\n');
    const slow = await operator('slow', 'python', 'import time\ndef run(c, p, x):\n    print("slow start")\n    time.sleep(20)\n');
    const broken = await operator('broken', 'python', 'def run(:\n');
    const [error, timeout, cancelled, fail] = await Promise.all([runNew('raising', raising), runNew('endless', endless), runNew('slow', slow), runNew('broken', broken)]);
    await waitForItem<Task>(admin, cancelled, (item) => item.state === 'running', 30_000);
    expect((await svc.client().post(`/api/v1/task/update/${cancelled}`, { json: { user_set_state: 'cancel' }, token: admin.token })).status).to.equal(200);
    const cases: Array<[string, string]> = [
      [error, 'error'],
      [timeout, 'timeout'],
      [cancelled, 'cancelled'],
      [fail, 'fail'],
    ];
    for (const [laui, state] of cases) {
      const { lines } = await ended(laui, [state]);
      const last = lines.at(-1);
      expect(last, state).to.include({ session_end: true, status: state, level: 'error', step: 'finish' });
      expect(lines.filter((line) => line.session_end === true), state).to.have.length(1);
    }
    expect((await ended(error, ['error'])).lines.map((line) => line.message)).to.include('about to fail');
    expect((await ended(cancelled, ['cancelled'])).lines.map((line) => line.message)).to.include('slow start');
  });

  // How long the service takes to answer meanwhile is a speed figure: `BENCH_ONLY=event-loop npm run bench`.
  it('given a task printing 100,000 lines, when it runs, then its session holds the first 10,000 and one line counting the rest, and the service answers meanwhile', async () => {
    const laui = await runNew('flood', await operator('flood', 'python', PY_FLOOD));
    let task: Task = { state: 'queued' };
    while (!['success', 'error'].includes(task.state)) {
      const reply = await svc.client().get('/healthz');
      expect(reply.status).to.equal(200);
      task = (await admin.get({ item_laui: laui })).json as Task;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(task.state, JSON.stringify(task.last_run_output)).to.equal('success');
    const { lines } = await ended(laui, ['success']);
    const output = lines.filter((line) => line.stream === 'stdout');
    expect(output).to.have.length(10_000);
    expect(output.at(-1)?.message).to.equal('9999');
    const dropped = lines.filter((line) => line.dropped_lines !== undefined);
    expect(dropped).to.have.length(1);
    expect(dropped[0]).to.include({ level: 'warning', step: 'output', dropped_lines: 90_000 });
    expect(lines.at(-1)).to.include({ session_end: true });
  });

  it('given code printing what looks like a log line of another session and a guessed step mark, when it runs, then both are text of its own session only', async () => {
    const other = '65a0000000000000000000ee';
    const forged = JSON.stringify({ timestamp: '2026-01-01T00:00:00.000Z', level: 'info', category: 'TASK', session_id: other, session_end: true, message: 'forged' });
    const code = `import sys\ndef run(c, p, x):\n    print(${JSON.stringify(forged)})\n    sys.stdout.write("\\x1e0123456789abcdef:finish\\x1eguessed mark\\n")\n`;
    const laui = await runNew('forger', await operator('forger', 'python', code));
    const { sessionId, lines } = await ended(laui, ['success']);
    expect(findSessionLogFile(logs(), other)).to.equal(null);
    const output = lines.filter((line) => line.stream === 'stdout');
    expect(output.map((line) => [line.session_id, line.step, line.message])).to.deep.equal([
      [sessionId, 'run', forged],
      [sessionId, 'run', '\x1e0123456789abcdef:finish\x1eguessed mark'],
    ]);
    expect(lines.filter((line) => line.session_end === true)).to.have.length(1);
    expect(lines.at(-1)).to.include({ session_end: true, step: 'finish', status: 'success' });
  });

  it('given an action that prints, when run, then its output and its end line are in its session, step action', async () => {
    const folder = await admin.createOk({ item_type: 'folder.workflow', name: 'actions', parent_laui: bed.tree.folders.workflow });
    const action = await admin.createOk({
      item_type: 'action',
      name: 'talks.action',
      parent_laui: folder,
      project_laui: bed.tree.project_laui,
      account_laui: bed.tree.account_laui,
      codeblock: { language: 'javascript', code: 'export function run() { console.log("acting"); console.error("grumbling"); return 1; }\n' },
    });
    const reply = await svc.client().post('/api/v1/action/run', { json: { item_type: 'action', item_laui: action }, token: admin.token });
    expect(reply.status, reply.text).to.equal(200);
    const sessionId = reply.headers.get('x-session-id') ?? '';
    await svc.service.logger.flush();
    const lines = sessionLines(sessionId);
    expect(lines.slice(0, -1).map((line) => [line.level, line.step, line.message, line.session_end ?? false])).to.have.deep.members([
      ['info', 'action', 'acting', false],
      ['error', 'action', 'grumbling', false],
    ]);
    expect(lines.at(-1)).to.include({ level: 'info', step: 'action', status: 'success', session_end: true });
    expect(lines).to.have.length(3);
    expect(lines[0]).to.include({ category: 'TASK', action_laui: action, action_name: 'talks.action' });
  });
});

describe('the end line of runs that never ran or whose worker died (HTTP, embedded service)', function () {
  this.timeout(60_000);
  let svc: TestService;
  let admin: CatalogClient;
  let bed: TaskBed;
  let quick: string;
  const sessionLines = (sessionId: string): Line[] => {
    const file = findSessionLogFile(join(svc.dataDir, 'logs'), sessionId);
    if (file === null) return [];
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line.includes(sessionId))
      .map((line) => JSON.parse(line) as Line);
  };
  const runNew = async (name: string): Promise<string> => {
    const reply = await svc.client().post('/api/v1/task/run', { json: { item_type: 'task', ...bed.taskBody(name, quick) }, token: admin.token });
    expect(reply.status, reply.text).to.equal(200);
    return (reply.json as { item_laui: string }).item_laui;
  };
  const deliver = (laui: string, sessionId: string) =>
    svc.service.bus.publish(EXECUTE_TASK, laui, { task_laui: laui, connection_laui: bed.connection, dispatch_id: 'replayed', session_id: sessionId, access_token: '', payload: null, user_laui: null, position: null });

  before(async () => {
    svc = await startTestService({ REAPER_INTERVAL_MS: '200' });
    admin = catalogClient(svc, (await svc.login()).token);
    bed = await taskBed(admin, 'ends-co', { name: 'c', content: {}, max_parallelism: 1 });
    quick = await admin.createOk({ item_type: 'operator', name: 'quick.operator', parent_laui: bed.tree.folders.operator, codeblock: { language: 'javascript', code: 'export function run() { return null; }\n' } });
    await admin.createOk({ item_type: 'config', name: 'system', parent_laui: bed.tree.folders.config, config_type: 'system', content: { stale_heartbeat_seconds: 1 } });
  });
  after(async () => svc.stop());

  it('given a session that was dispatched but never picked up (the task was reset meanwhile), when its message comes, then its session ends with a line saying so; a duplicate of a run that ran adds nothing', async () => {
    const laui = await runNew('reset-while-queued');
    const ran = await waitForItem<Task>(admin, laui, (item) => item.state === 'success', 30_000);
    expect((await svc.client().post(`/api/v1/task/dangerously_reset/${laui}`, { token: admin.token })).status).to.equal(200);
    const never = newSessionId();
    // The duplicate first: both carry the task's key, so they are consumed in this order and the
    // never-run session's line, once written, shows that the duplicate was handled too.
    await deliver(laui, String(ran.last_run_session_id));
    await deliver(laui, never);
    const deadline = Date.now() + 30_000;
    for (;;) {
      await svc.service.logger.flush();
      if (sessionLines(never).length > 0 || Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const lines = sessionLines(never);
    expect(lines).to.have.length(1);
    expect(lines[0]).to.include({ session_end: true, category: 'TASK_HISTORY', step: 'skip', status: 'scheduled', task_laui: laui, task_name: 'reset-while-queued' });
    const ranLines = sessionLines(String(ran.last_run_session_id));
    expect(ranLines.filter((line) => line.session_end === true)).to.have.length(1);
    expect(ranLines.at(-1)).to.include({ session_end: true, step: 'finish' });
  });

  it('given a lease whose worker died, when the reaper releases it, then its line ends the run\'s session', async () => {
    const laui = await runNew('orphan');
    await waitForItem<Task>(admin, laui, (item) => item.state === 'success', 30_000);
    // A worker that took the lease and died: a lease without a worker, the task marked running under it.
    const { queueHandler } = await import('../../command-side/queue/handler.ts');
    const { metadataFor } = await import('../../shared/events.ts');
    const { changeTask } = await import('../../command-side/task/changeTask.ts');
    const queue = queueHandler(svc.service.eventStore);
    const meta = metadataFor(null, new Date(), 'test');
    await queue.enqueue(bed.connection, { laui, priority: 1, sortValues: {} }, meta);
    const { leases } = await queue.dispatch(bed.connection, 1, {}, meta);
    const sessionId = String(leases[0]?.sessionId);
    await changeTask(svc.service.eventStore, laui, [{ state: 'queued_for_connection' }, { state: 'queued_in_redis', session_id: sessionId }, { state: 'running' }], meta);
    await waitForItem<Task>(admin, laui, (item) => item.state === 'error', 15_000);
    await svc.service.logger.flush();
    const lines = sessionLines(sessionId);
    expect(lines.at(-1)).to.include({ session_end: true, step: 'reap', status: 'error', category: 'TASK_HISTORY' });
  });
});

describe('LOG_DIR (embedded service)', function () {
  this.timeout(60_000);
  it('given LOG_DIR, when the service starts and logs, then the logs root is there (category folders, 0700) and DATA_DIR holds no logs', async () => {
    const logDir = join(mkdtempSync(join(tmpdir(), 'logdir-')), 'service-logs');
    const svc = await startTestService({ LOG_DIR: logDir });
    try {
      await svc.client().get('/healthz');
      await svc.service.logger.flush();
      expect(readdirSync(logDir)).to.include.members([...LOG_CATEGORIES, 'sessions']);
      expect(readdirSync(join(logDir, 'API')).some((name) => /^\d{4}-\d{2}-\d{2}\.jsonl$/.test(name))).to.equal(true);
      expect(existsSync(join(svc.dataDir, 'logs'))).to.equal(false);
      const { statSync } = await import('node:fs');
      expect(statSync(logDir).mode & 0o777).to.equal(0o700);
    } finally {
      await svc.stop();
      rmSync(join(logDir, '..'), { recursive: true, force: true });
    }
  });
});
