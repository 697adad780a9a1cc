import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HttpClient } from '../support/HttpClient.ts';
import { catalogClient, type CatalogClient } from '../support/catalogFixture.ts';
import { signIn } from '../support/signIn.ts';
import { startRole, stopRole, type RoleProcess } from '../support/roleProcess.ts';
import { requireKafkaBroker } from '../support/kafkaBroker.ts';
import { sleep } from '../cron/cronFixture.ts';

const PASSWORD = 'admin-password-1';
const TASKS = 200;
const PARALLELISM = 4;
const CRON_PROJECTS = 6;
/** The group's session timeout: how long Kafka waits for a killed member (KAFKA_SESSION_TIMEOUT_MS). */
const SESSION_TIMEOUT_MS = 6_000;
/** Spec 4.5's liveness rule plus the supervisor's tick; the documented takeover bound adds the session timeout. */
const CRON_INTERVAL_S = 1;
/**
 * stale_heartbeat_seconds: longer than the session timeout, so that the messages queued on the
 * killed worker's partitions reach the survivor (after the rebalance) before the reaper would
 * judge their leases; the runs the killed worker held are reaped this long after its last beat.
 */
const STALE_S = 15;

/** Each run waits 300 ms in check_completion: long enough for four to overlap, short enough for 200. */
const SLOW_OPERATOR = `
export function run() { return null; }
export async function check_completion() { await new Promise((resolve) => setTimeout(resolve, 300)); return { status: 'success' }; }
`;
const QUICK_OPERATOR = `
export function run() { return null; }
export function check_completion(connection, payload) { return { status: 'success', ds: payload.day }; }
`;

interface LoggedEvent {
  position: number;
  stream: string;
  type: string;
  data: Record<string, unknown> & { changes?: Record<string, unknown>; fields?: Record<string, unknown> };
}

/**
 * Issue 25's cross-process run: 2 api, 2 worker and 2 scheduler processes (`npm start -- --role`)
 * on one DATA_DIR and the live Kafka broker. 200 tasks on a max_parallelism 4 connection, then a
 * worker and the scheduler that loops some projects are killed with SIGKILL mid-run.
 */
describe('roles as processes on one data directory and a live Kafka broker', function () {
  this.timeout(900_000);
  let brokers = '';
  let dataDir = '';
  const processes: RoleProcess[] = [];

  before(async function () {
    // The live broker (TEST_KAFKA_BROKERS, CI), else one under testcontainers, else skipped (failed under CI).
    brokers = (await requireKafkaBroker(this)).brokers.join(',');
  });

  after(async () => {
    await Promise.all(processes.map((process) => stopRole(process).catch(() => undefined)));
    if (dataDir !== '') rmSync(dataDir, { recursive: true, force: true });
  });

  it('given 200 tasks on a connection of parallelism 4, when a worker and a scheduler are killed mid-run, then every task ran once, never more than 4 at once, and the killed scheduler projects move on without a logical date dispatched twice', async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'orchestrator-xp-'));
    const env: Record<string, string> = {
      DATA_DIR: dataDir,
      ADMIN_PASSWORD: PASSWORD,
      PORT: '0',
      KAFKA_BROKERS: brokers,
      // Fresh topics and groups for this run on a broker other runs may have used.
      KAFKA_TOPIC_PREFIX: `xp-${randomBytes(4).toString('hex')}.`,
      KAFKA_SESSION_TIMEOUT_MS: String(SESSION_TIMEOUT_MS),
      SQLITE_SYNCHRONOUS: 'normal',
      REAPER_INTERVAL_MS: '1000',
      WORKER_POOL_SIZE: '1',
      WORKER_CONCURRENCY: String(PARALLELISM),
      READ_YOUR_WRITES_TIMEOUT_MS: '60000',
      ...(process.getuid?.() === 0 ? {} : { WORKER_SANDBOX: 'none' }),
      ...(process.env.CI ? { CI: process.env.CI } : {}),
    };
    // As root, processes on one host need run identity ranges of their own (the second with the
    // same range refuses to start): 100 each, claimed in a registry of this test's, not the host's.
    const identities = (n: number): Record<string, string> =>
      process.getuid?.() === 0
        ? { WORKER_RUN_AS_UID: String(64_000 + n * 100), WORKER_RUN_AS_GID: String(64_000 + n * 100), WORKER_RUN_AS_COUNT: '100', WORKER_RUN_AS_REGISTRY: join(dataDir, 'run-uids') }
        : {};
    // The first process makes the keys and the admin; the others find them in DATA_DIR.
    const api1 = await startRole('api', { ...env, ...identities(0) });
    processes.push(api1);
    const [api2, worker1, worker2, scheduler1, scheduler2] = await Promise.all([
      startRole('api', { ...env, ...identities(1) }),
      startRole('worker', { ...env, ...identities(2) }),
      startRole('worker', { ...env, ...identities(3) }),
      startRole('scheduler', { ...env, ...identities(4) }),
      startRole('scheduler', { ...env, ...identities(5) }),
    ]);
    processes.push(api2, worker1, worker2, scheduler1, scheduler2);
    for (const process of processes) expect((await new HttpClient(process.url).get('/healthz')).json).to.deep.equal({ status: 'ok', role: process.role });

    const { token } = await signIn(api1.url, 'admin', PASSWORD);
    const apis = [api1, api2].map((process) => catalogClient({ client: () => new HttpClient(process.url) }, token));
    const [api] = apis as [CatalogClient, CatalogClient];

    // The batch: one workflow, a parallelism-4 connection, the slow operator; a reaper that judges fast.
    const tree = await api.bootstrap('xp');
    const workflow = await api.createOk({ item_type: 'folder.workflow', name: 'wf', parent_laui: tree.folders.workflow });
    const connection = await api.createOk({ item_type: 'connection', name: 'c4', parent_laui: tree.folders.connection, content: {}, max_parallelism: PARALLELISM });
    const slow = await api.createOk({ item_type: 'operator', name: 'slow.operator', parent_laui: tree.folders.operator, codeblock: { language: 'javascript', code: SLOW_OPERATOR } });
    await api.createOk({ item_type: 'config', name: 'xp-system', parent_laui: tree.folders.config, config_type: 'system', content: { main_cron_interval: CRON_INTERVAL_S, stale_heartbeat_seconds: STALE_S } });

    // The crons: projects with a per-minute task twenty minutes behind, each on its own connection.
    const cronTasks: string[] = [];
    const cronProjects: string[] = [];
    for (let index = 0; index < CRON_PROJECTS; index += 1) {
      const project = await api.bootstrap(`cron${index}`);
      const cronWorkflow = await api.createOk({ item_type: 'folder.workflow', name: 'wf', parent_laui: project.folders.workflow });
      const cronConnection = await api.createOk({ item_type: 'connection', name: 'c1', parent_laui: project.folders.connection, content: {}, max_parallelism: 1 });
      const quick = await api.createOk({ item_type: 'operator', name: 'ds.operator', parent_laui: project.folders.operator, codeblock: { language: 'javascript', code: QUICK_OPERATOR } });
      const now = Date.now();
      cronTasks.push(
        await api.createOk({
          item_type: 'task',
          name: `cron-${index}`,
          parent_laui: cronWorkflow,
          project_laui: project.project_laui,
          account_laui: project.account_laui,
          operator_laui: quick,
          connection_laui: cronConnection,
          frequency: '* * * * *',
          start_date: new Date(now - 20 * 60_000).toISOString(),
          end_date: new Date(now + 24 * 3_600_000).toISOString(),
          payload: { day: '{{ds}}' },
        }),
      );
      cronProjects.push(project.project_laui);
    }
    // The second api process serves what the first wrote once its read models have it (it follows the
    // shared log by polling): wait for the last item written, so that everything before it is there too.
    const lastWritten = cronTasks.at(-1)!;
    await waitFor('the second api process to see the last item written', async () => (await apis[1]!.get({ item_laui: lastWritten })).status === 200, 60_000);
    for (const project of cronProjects) {
      const started = await new HttpClient(api2.url).post('/api/v1/cron/manage', { json: { project_laui: project, action: 'START' }, token });
      expect(started.status, started.text).to.equal(200);
    }

    // 200 runs, created and run through both api processes, eight requests at a time.
    const taskLauis: string[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < TASKS) {
          const index = next;
          next += 1;
          const client = new HttpClient([api1, api2][index % 2]!.url);
          const reply = await client.post('/api/v1/task/run', {
            token,
            json: { name: `t${index}`, parent_laui: workflow, project_laui: tree.project_laui, account_laui: tree.account_laui, operator_laui: slow, connection_laui: connection },
          });
          expect(reply.status, reply.text).to.equal(200);
          taskLauis.push((reply.json as { item_laui: string }).item_laui);
        }
      }),
    );

    // Mid-run: some tasks done, every project looping somewhere. Kill a worker, and a scheduler that loops some projects.
    await waitFor('20 tasks to succeed', async () => (await eventsOf(api1.url, token, 'TaskSucceeded')).filter((event) => taskLauis.includes(laui(event))).length >= 20, 300_000);
    await waitFor('every cron project to have a loop', async () => cronProjects.every((project) => loopOwners(dataDir, project).length > 0), 120_000);
    const ownerOf = (project: string) => loopOwners(dataDir, project).at(-1)?.owner ?? '';
    const victim = [scheduler1, scheduler2].find((scheduler) => cronProjects.some((project) => ownerOf(project).includes(`:${scheduler.pid}`)));
    expect(victim, 'a scheduler loops the projects').to.not.equal(undefined);
    const survivor = victim === scheduler1 ? scheduler2 : scheduler1;
    const orphaned = cronProjects.filter((project) => ownerOf(project).includes(`:${victim!.pid}`));
    const killedAt = Date.now();
    worker1.kill('SIGKILL');
    victim!.kill('SIGKILL');
    await Promise.all([worker1.exited, victim!.exited]);

    // Ownership: each project of the killed scheduler gets a loop on the survivor.
    await waitFor('the survivor to loop the killed scheduler projects', async () => orphaned.every((project) => loopOwners(dataDir, project).some((loop) => loop.owner.includes(`:${survivor.pid}`) && loop.at >= killedAt)), 180_000);
    const takeover = Math.max(...orphaned.map((project) => loopOwners(dataDir, project).find((loop) => loop.owner.includes(`:${survivor.pid}`) && loop.at >= killedAt)!.at)) - killedAt;
    console.log(`      ${orphaned.length} project(s) moved to the surviving scheduler ${takeover} ms after the kill (session timeout ${SESSION_TIMEOUT_MS} ms)`);

    // Every task ends: success, or error for the runs the killed worker held (the reaper's verdict).
    await waitFor('all 200 tasks to end', async () => {
      const ended = new Set((await eventsOf(api1.url, token, 'Task')).filter((event) => ['TaskSucceeded', 'TaskErrored'].includes(event.type)).map(laui));
      return taskLauis.every((task) => ended.has(task));
    }, 600_000);

    const events = await eventsOf(api1.url, token);
    const ofTask = (task: string) => events.filter((event) => event.stream === `item-${task}`);
    // Each task ran once: one pick-up by a worker, one end. The reaper's verdict (error) is only for
    // the runs the killed worker held: a dispatch still waiting on a partition of the killed worker is
    // never judged (Kafka keeps it for the survivor), however long the rebalance takes.
    const workerOf = new Map<string, string>();
    for (const task of taskLauis) {
      const started = ofTask(task).filter((event) => event.type === 'TaskStarted');
      const ends = ofTask(task).filter((event) => ['TaskSucceeded', 'TaskErrored', 'TaskFailed', 'TaskTimedOut'].includes(event.type));
      expect(ends.map((event) => event.type), `task ${task} ends once`).to.have.length(1);
      expect(started.length, `task ${task} starts at most once`).to.be.at.most(1);
      workerOf.set(task, String(started[0]?.data.changes?.executor ?? ''));
      if (ends[0]!.type === 'TaskErrored') {
        expect(JSON.stringify(ends[0]!.data.changes?.last_run_output), 'the reaper ended it').to.include('heartbeat went stale');
        expect(started, `reaped task ${task} had started`).to.have.length(1);
        expect(workerOf.get(task), 'only the killed worker runs are reaped').to.match(new RegExp(`:${worker1.pid}$`));
      } else {
        expect(ends[0]!.type).to.equal('TaskSucceeded');
        expect(started, `task ${task} that succeeded was picked up`).to.have.length(1);
      }
    }
    const reaped = taskLauis.filter((task) => ofTask(task).some((event) => event.type === 'TaskErrored'));
    expect(reaped.length, 'at most the runs the killed worker held').to.be.at.most(PARALLELISM);
    console.log(`      ${reaped.length} run(s) reaped; ${TASKS - reaped.length} succeeded`);
    expect([...workerOf.values()].filter((worker) => worker.endsWith(`:${worker2.pid}`)).length, 'the surviving worker ran tasks').to.be.greaterThan(0);

    // Never more than 4 at once: the connection queue's leases, in log order.
    let held = 0;
    let most = 0;
    for (const event of events.filter((candidate) => candidate.stream === `queue-${connection}`)) {
      if (event.type === 'TaskLeased') held += 1;
      if (event.type === 'TaskSlotReleased') held -= 1;
      most = Math.max(most, held);
    }
    expect(most, 'leases held at once').to.be.at.most(PARALLELISM);
    expect(most, 'the connection was used to its parallelism').to.equal(PARALLELISM);
    expect(held, 'every lease released').to.equal(0);

    // No logical date dispatched twice: fold each cron task's logical date and look at its dispatches.
    for (const task of cronTasks) {
      let logicalDate: unknown = null;
      const dispatched: string[] = [];
      for (const event of ofTask(task)) {
        if (event.type === 'ItemCreated') logicalDate = event.data.fields?.logical_date ?? null;
        if (event.data.changes && 'logical_date' in event.data.changes) logicalDate = event.data.changes.logical_date;
        if (event.type === 'TaskDispatched') dispatched.push(String(logicalDate));
      }
      expect(dispatched.length, `cron task ${task} ran`).to.be.greaterThan(1);
      expect(new Set(dispatched).size, `cron task ${task} dispatches ${dispatched.join(', ')}`).to.equal(dispatched.length);
    }
  });
});

const laui = (event: LoggedEvent): string => event.stream.replace(/^item-/, '');

/** The whole log (or the events whose type starts with `type`), through GET /api/v1/events as the admin. */
const eventsOf = async (url: string, token: string, type?: string): Promise<LoggedEvent[]> => {
  const client = new HttpClient(url);
  const all: LoggedEvent[] = [];
  let from: number | null = 0;
  while (from !== null) {
    const reply = await client.get(`/api/v1/events?limit=1000&from=${from}${type ? `&type=${type}` : ''}`, { token });
    expect(reply.status, reply.text).to.equal(200);
    const page = reply.json as { events: LoggedEvent[]; next_from: number | null };
    all.push(...page.events);
    from = page.events.length === 0 ? null : page.next_from;
  }
  return all;
};

/** "Cron loop <owner> started" lines of the service's CRON log (every process writes the shared logs root). */
const loopOwners = (dataDir: string, project: string): Array<{ owner: string; at: number }> => {
  const folder = join(dataDir, 'logs', 'CRON');
  let files: string[];
  try {
    files = readdirSync(folder).filter((name) => name.endsWith('.jsonl')).sort();
  } catch {
    return [];
  }
  const loops: Array<{ owner: string; at: number }> = [];
  for (const file of files) {
    for (const line of readFileSync(join(folder, file), 'utf8').split('\n')) {
      if (!line.includes(project) || !line.includes('Cron loop')) continue;
      try {
        const entry = JSON.parse(line) as { message?: string; project_laui?: string; timestamp?: string; time?: string };
        const started = /^Cron loop (\S+) started/.exec(entry.message ?? '');
        if (started?.[1] && entry.project_laui === project) loops.push({ owner: started[1], at: Date.parse(entry.timestamp ?? entry.time ?? '') });
      } catch {
        // A line being written by another process: read again at the next poll.
      }
    }
  }
  return loops.sort((a, b) => a.at - b.at);
};

const waitFor = async (what: string, condition: () => Promise<boolean>, timeoutMs: number): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(500);
  }
};
