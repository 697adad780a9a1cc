import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HttpClient } from '../../test/support/HttpClient.ts';
import { catalogClient, waitForItem, type CatalogClient } from '../../test/support/catalogFixture.ts';
import { signIn } from '../../test/support/signIn.ts';
import { startRole, stopRole, type RoleProcess } from '../../test/support/roleProcess.ts';
import { loadConfig } from '../config.ts';
import { startService, type Service } from '../service.ts';
import { scryptPasswords } from '../auth/scryptPasswords.ts';
import { shutdownReason } from './gracefulStop.ts';

const PASSWORD = 'admin-password-1';
/** A run that would go on for five minutes: only a stop ends it within the test. */
const LONG_OPERATOR = `
export async function run() { await new Promise((resolve) => setTimeout(resolve, 300000)); return { done: true }; }
`;
/** Generous deadlines (a loaded 2-core machine): conditions are waited for, durations never asserted. */
const EXIT_DEADLINE_MS = 60_000;

/** Resolves with how the process ended, or fails once `ms` passed without it. */
const exitWithin = async (process: RoleProcess, ms: number): Promise<string> => {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still running ${ms} ms after the signal:\n${process.output().slice(-3000)}`)), ms);
  });
  try {
    return await Promise.race([process.exited, late]);
  } finally {
    clearTimeout(timer);
  }
};

const waitForOutput = async (process: RoleProcess, pattern: RegExp, ms = EXIT_DEADLINE_MS): Promise<void> => {
  const deadline = Date.now() + ms;
  while (!pattern.test(process.output())) {
    if (Date.now() > deadline) throw new Error(`no ${String(pattern)} in the output:\n${process.output().slice(-3000)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
};

/**
 * Issue 33: SIGINT/SIGTERM stop taking work, say what they wait for, wait at most
 * SHUTDOWN_GRACE_SECONDS, then stop the runs; their tasks end `error` with the reason; a second
 * signal stops at once. The service is `npm start` as its own process (ops/main.ts).
 */
describe('bounded shutdown (npm start as a process, SIGTERM and SIGINT)', function () {
  this.timeout(600_000);
  let dataDir = '';
  const started: RoleProcess[] = [];

  const env = (graceSeconds: number): Record<string, string> => ({
    DATA_DIR: dataDir,
    ADMIN_PASSWORD: PASSWORD,
    PORT: '0',
    SQLITE_SYNCHRONOUS: 'normal',
    SHUTDOWN_GRACE_SECONDS: String(graceSeconds),
    WORKER_POOL_SIZE: '0',
    // No nftables table for this test's processes (the network policy is not what is tested here).
    WORKER_NETWORK: 'host',
    // As root: a range and a registry of this spec's own, never the host's (see roleProcess users).
    ...(process.getuid?.() === 0
      ? { WORKER_RUN_AS_UID: '61500', WORKER_RUN_AS_GID: '61500', WORKER_RUN_AS_COUNT: '20', WORKER_RUN_AS_REGISTRY: join(dataDir, 'run-uids') }
      : { WORKER_SANDBOX: 'none' }),
  });

  const start = async (graceSeconds: number): Promise<{ process: RoleProcess; api: CatalogClient; client: HttpClient; token: string }> => {
    const process = await startRole('all', env(graceSeconds));
    started.push(process);
    const { token } = await signIn(process.url, 'admin', PASSWORD);
    const client = new HttpClient(process.url);
    return { process, api: catalogClient({ client: () => client }, token), client, token };
  };

  before(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'orchestrator-shutdown-'));
  });
  after(async () => {
    await Promise.all(started.map((process) => stopRole(process, 5_000).catch(() => undefined)));
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('given a run of five minutes and SHUTDOWN_GRACE_SECONDS=2, when SIGTERM arrives, then the output names the run and the wait, the process exits, and after a restart the task is error with the reason; given a run and SIGINT, when a second SIGINT arrives, then the process exits at once, non-zero', async () => {
    const first = await start(2);
    const tree = await first.api.bootstrap('stop');
    const workflow = await first.api.createOk({ item_type: 'folder.workflow', name: 'wf', parent_laui: tree.folders.workflow });
    const connection = await first.api.createOk({ item_type: 'connection', name: 'c', parent_laui: tree.folders.connection, content: {}, max_parallelism: 1 });
    const operator = await first.api.createOk({ item_type: 'operator', name: 'long.operator', parent_laui: tree.folders.operator, codeblock: { language: 'javascript', code: LONG_OPERATOR } });
    const ran = await first.client.post('/api/v1/task/run', {
      token: first.token,
      json: { name: 'nightly-load', parent_laui: workflow, project_laui: tree.project_laui, account_laui: tree.account_laui, operator_laui: operator, connection_laui: connection },
    });
    expect(ran.status, ran.text).to.equal(200);
    const task = (ran.json as { item_laui: string }).item_laui;
    await waitForItem(first.api, task, (item) => item.state === 'running', EXIT_DEADLINE_MS);

    // SIGTERM: what it waits for (the run, its task's name and LAUI, the seconds), then the stop.
    first.process.kill('SIGTERM');
    expect(await exitWithin(first.process, EXIT_DEADLINE_MS)).to.equal('0');
    const said = first.process.output();
    expect(said).to.include('SIGTERM received, stopping');
    expect(said).to.match(new RegExp(`Waiting up to 2 s \\(SHUTDOWN_GRACE_SECONDS\\) for 1 run: task "nightly-load" \\(${task}\\) \\(running for \\d+ s`));
    expect(said).to.include(`Grace period over (SHUTDOWN_GRACE_SECONDS=2): stopped 1 run`);
    expect(said).to.include('Stopped');

    // The next start: the task ended error with the reason (the run's own end, recorded before the exit).
    const second = await start(600);
    const ended = await waitForItem(second.api, task, (item) => item.state !== 'running', EXIT_DEADLINE_MS);
    expect(ended.state).to.equal('error');
    expect(ended.last_run_output).to.deep.equal({ error: shutdownReason(2) });
    // Recorded as the run's end through the task's decider: a TaskErrored from running.
    const events = await second.client.get(`/api/v1/events?stream=item-${task}&limit=1000`, { token: second.token });
    expect(events.status, events.text).to.equal(200);
    const errored = (events.json as { events: Array<{ type: string; data: { from?: string; changes?: Record<string, unknown> } }> }).events.filter((event) => event.type === 'TaskErrored');
    expect(errored.map((event) => [event.data.from, event.data.changes?.last_run_output])).to.deep.equal([['running', { error: shutdownReason(2) }]]);

    // A second SIGINT while the first waits (600 s of grace) stops at once, non-zero.
    const again = await second.client.post('/api/v1/task/run', { token: second.token, json: { item_laui: task } });
    expect(again.status, again.text).to.equal(200);
    await waitForItem(second.api, task, (item) => item.state === 'running', EXIT_DEADLINE_MS);
    second.process.kill('SIGINT');
    await waitForOutput(second.process, /Waiting up to 600 s \(SHUTDOWN_GRACE_SECONDS\) for 1 run: task "nightly-load"/);
    second.process.kill('SIGINT');
    expect(await exitWithin(second.process, EXIT_DEADLINE_MS)).to.equal('130');
    expect(second.process.output()).to.include('SIGINT received again: stopping at once');
  });
});

/**
 * The roles stop the same way (one shutdown for every role: ops/service.ts). An api process holds
 * no worker: what it waits for is its HTTP requests, here an action run of five minutes.
 */
describe('bounded shutdown of an api process (an action run over HTTP)', function () {
  this.timeout(180_000);
  let dataDir = '';
  let service: Service | null = null;

  before(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'orchestrator-shutdown-api-'));
  });
  after(async () => {
    await service?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('given an action of five minutes in progress and SHUTDOWN_GRACE_SECONDS=1, when the api process stops, then it names the action, stops it, the request is answered with the reason and the stop completes', async () => {
    const loaded = loadConfig({
      PORT: '0',
      DATA_DIR: dataDir,
      ADMIN_PASSWORD: PASSWORD,
      SQLITE_SYNCHRONOUS: 'normal',
      WORKER_POOL_SIZE: '0',
      WORKER_NETWORK: 'host',
      SHUTDOWN_GRACE_SECONDS: '1',
      WORKER_RUN_AS_REGISTRY: join(dataDir, 'run-uids'),
      ...(process.getuid?.() === 0 ? { WORKER_RUN_AS_UID: '61550', WORKER_RUN_AS_GID: '61550', WORKER_RUN_AS_COUNT: '20' } : { WORKER_SANDBOX: 'none' }),
    });
    // Roles other than all need a shared bus, which loadConfig insists on: the in-process one stands in (roles.int.spec.ts).
    const running = await startService({ ...loaded, role: 'api' }, { passwords: scryptPasswords(2 ** 10), announce: () => undefined });
    service = running;
    const { token } = await signIn(running.url, 'admin', PASSWORD);
    const client = new HttpClient(running.url);
    const api = catalogClient({ client: () => client }, token);
    const tree = await api.bootstrap('stopapi');
    const action = await api.createOk({ item_type: 'action', name: 'long.action', parent_laui: tree.folders.action, codeblock: { language: 'javascript', code: LONG_OPERATOR } });

    const reply = client.post('/api/v1/action/run', { json: { item_type: 'action', item_laui: action }, token });
    const deadline = Date.now() + EXIT_DEADLINE_MS;
    while (!running.activeRuns().some((run) => run.actionLaui === action)) {
      if (Date.now() > deadline) throw new Error('the action run did not start');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const lines: string[] = [];
    await running.shutdown({ report: (line) => lines.push(line) });
    service = null;

    expect(lines[0]).to.match(new RegExp(`^Waiting up to 1 s \\(SHUTDOWN_GRACE_SECONDS\\) for 1 run: action "long.action" \\(${action}\\) \\(running for \\d+ s, session \\w+\\); and HTTP requests in progress$`));
    expect(lines[1]).to.match(/^Grace period over \(SHUTDOWN_GRACE_SECONDS=1\): stopped 1 run /);
    expect(lines.slice(2), 'nothing was given up on').to.deep.equal([]);
    const answered = await reply;
    expect(answered.status).to.equal(500);
    expect(answered.json).to.deep.equal({ detail: `Internal server error: ${shutdownReason(1)}` });
  });
});
