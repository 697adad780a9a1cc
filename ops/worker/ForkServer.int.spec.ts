import { expect } from 'chai';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ActionOutcome, ActionRunRequest, RunLimits } from '../../shared/ports/CodeRunner.ts';
import { exists, NODE_IDENTITY, running, until, type NodeIdentity } from '../../test/support/runtimeProcesses.ts';
import { ProcessCodeRunner } from './ProcessCodeRunner.ts';
import { REUSE } from './operatorRequests.ts';

const LIMITS: RunLimits = { timeoutMs: 10_000, memoryMb: 128, maxOutputBytes: 64 * 1024 };

/** Module state and imports of one run, and who serves it. */
const STATEFUL = `
import os, sys
counter = {"runs": 0}
def run(connection, action_variables, context):
    counter["runs"] += 1
    saw_colorsys = "colorsys" in sys.modules
    import colorsys  # not imported by the fork server: must not leak into the next run
    return {"pid": os.getpid(), "ppid": os.getppid(), "runs": counter["runs"], "sawColorsys": saw_colorsys,
            "userModules": sorted(n for n in sys.modules if n.startswith("user_code_"))}
`;

/** Writes its pid to context.pidfile, then sleeps. */
const SLEEPER = `
import os, time
def run(connection, action_variables, context):
    with open(context["pidfile"], "w") as f:
        f.write(str(os.getpid()))
    time.sleep(30)
`;

describe('Python fork server: a fresh forked process per run', function () {
  this.timeout(20_000);
  let scratch: string;
  const runners: ProcessCodeRunner[] = [];

  const runner = (options: ConstructorParameters<typeof ProcessCodeRunner>[0] = {}) => {
    const created = new ProcessCodeRunner({ poolSize: 2, interruptGraceMs: 300, ...options });
    runners.push(created);
    return created;
  };
  const action = (on: ProcessCodeRunner, code: string, overrides: Partial<ActionRunRequest> = {}): Promise<ActionOutcome> =>
    on.runAction({ codeblock: { language: 'python', code }, connection: {}, actionVariables: {}, context: {}, limits: LIMITS, ...overrides });
  const result = <T>(outcome: ActionOutcome): T => {
    if (!outcome.ok) throw new Error(`action failed: ${JSON.stringify(outcome)}`);
    return outcome.result as T;
  };
  /** Starts SLEEPER and resolves with its pid once it runs user code, plus the pending outcome. */
  const startSleeper = async (on: ProcessCodeRunner, tag: string) => {
    const pidfile = join(scratch, `${tag}.pid`);
    const outcome = action(on, SLEEPER, { context: { pidfile } });
    expect(await until(() => existsSync(pidfile) && readFileSync(pidfile, 'utf8') !== '', 60_000)).to.equal(true);
    return { pid: Number(readFileSync(pidfile, 'utf8')), outcome };
  };

  before(() => {
    scratch = mkdtempSync(join(tmpdir(), 'forkserver-spec-'));
  });

  after(async () => {
    await Promise.all(runners.map((r) => r.close()));
    rmSync(scratch, { recursive: true, force: true });
  });

  it('given two runs, when each bumps module state and imports a module, then they ran in different forked processes sharing none of it', async () => {
    const own = runner();
    await own.warmUp('python', LIMITS.memoryMb);
    const [zygote] = own.forkServerPids();
    type Seen = { pid: number; ppid: number; runs: number; sawColorsys: boolean; userModules: string[] };
    const first = result<Seen>(await action(own, STATEFUL));
    const second = result<Seen>(await action(own, STATEFUL));
    expect(second.pid).not.to.equal(first.pid);
    expect([first.ppid, second.ppid]).to.deep.equal([zygote, zygote]);
    expect([first.runs, second.runs]).to.deep.equal([1, 1]);
    expect([first.sawColorsys, second.sawColorsys]).to.deep.equal([false, false]);
    expect(second.userModules).to.deep.equal(['user_code_1']);
  });

  it('given the fork server, when it has served runs, then it is single-threaded and keeps the service uid', async () => {
    const own = runner();
    await action(own, STATEFUL);
    const [zygote] = own.forkServerPids();
    if (zygote === undefined) throw new Error('no fork server');
    const status = readFileSync(`/proc/${zygote}/status`, 'utf8');
    expect(/^Threads:\s+(\d+)$/m.exec(status)?.[1]).to.equal('1');
    expect(/^Uid:\s+(\d+)/m.exec(status)?.[1]).to.equal(String(process.getuid?.()));
  });

  it('given a run whose process is killed with SIGKILL from outside, when it is killed, then the run ends at once as an error naming the signal', async () => {
    const own = runner();
    const { pid, outcome } = await startSleeper(own, 'sigkill');
    process.kill(pid, 'SIGKILL');
    // "At once": an error naming the signal, not the timeout at the end of the time limit.
    const ended = await outcome;
    expect(ended.ok).to.equal(false);
    expect(!ended.ok && ended.kind).to.equal('error');
    expect(!ended.ok && ended.message).to.include('ended unexpectedly (signal SIGKILL)');
    expect(running(pid)).to.equal(false);
  });

  it('given the fork server killed while the pool holds forked processes, when the next run comes, then it succeeds in a process of a new fork server', async () => {
    const own = runner();
    await own.warmUp('python', LIMITS.memoryMb);
    const [zygote] = own.forkServerPids();
    const pooled = own.processIds();
    expect(pooled).to.have.length(2);
    if (zygote === undefined) throw new Error('no fork server');
    process.kill(zygote, 'SIGKILL');
    // The pooled processes can no longer be supervised: they are stopped, not left behind.
    // (They die with it, parent-death signal; the runner learns of it a moment later: both awaited.)
    expect(await until(() => !own.forkServerPids().includes(zygote) && pooled.every((pid) => !running(pid)))).to.equal(true);
    const after = result<{ pid: number; ppid: number }>(await action(own, STATEFUL));
    const [restarted] = own.forkServerPids();
    expect(restarted).to.be.a('number').and.not.equal(zygote);
    expect(after.ppid).to.equal(restarted);
    expect(pooled).not.to.include(after.pid);
  });

  it('given a run in progress, when the fork server dies, then the run ends as an error instead of hanging', async () => {
    const own = runner({ poolSize: 0 });
    const { pid, outcome } = await startSleeper(own, 'zygote-dies');
    const [zygote] = own.forkServerPids();
    if (zygote === undefined) throw new Error('no fork server');
    process.kill(zygote, 'SIGKILL');
    const ended = await outcome;
    expect(ended.ok).to.equal(false);
    expect(!ended.ok && ended.kind).to.equal('error');
    expect(!ended.ok && ended.message).to.include('fork server ended');
    expect(await until(() => !running(pid))).to.equal(true);
  });

  it('given a runner with pooled, busy and reused forked processes, when closed, then none of them nor the fork server is left, not even as a zombie', async () => {
    const own = runner();
    await own.warmUp('python', LIMITS.memoryMb);
    await action(own, STATEFUL, { ...REUSE });
    const { pid: busy, outcome } = await startSleeper(own, 'close');
    const pids = [...own.processIds(), ...own.forkServerPids(), busy];
    expect(pids.length).to.be.at.least(4);
    await own.close();
    expect(pids.filter(exists)).to.deep.equal([]);
    expect((await outcome).ok).to.equal(false);
  });

  it('given a connection to the runner socket with an unknown token, when it says hello, then it is closed and runs go on', async () => {
    const own = runner();
    await own.warmUp('python', LIMITS.memoryMb);
    const [zygote] = own.forkServerPids();
    // The socket path is the fork server's first argument.
    const socketPath = readFileSync(`/proc/${zygote}/cmdline`, 'utf8').split('\0')[5] ?? '';
    expect(socketPath).to.match(/forkserver-[^/]+\/s$/);
    const stray = connect(socketPath);
    stray.on('error', () => {});
    const received: Buffer[] = [];
    stray.on('data', (chunk: Buffer) => received.push(chunk));
    const closed = new Promise<void>((resolve) => stray.once('close', () => resolve()));
    stray.write(`${JSON.stringify({ token: 'f'.repeat(32), pid: process.pid, channel: 'protocol' })}\n`);
    await closed;
    expect(Buffer.concat(received).length).to.equal(0);
    expect(result<{ runs: number }>(await action(own, STATEFUL)).runs).to.equal(1);
  });

  it('given the fork server and no node fork server, when JavaScript runs come, then each is a fresh node exec\'d in a child of the fork server, started as a spawn would start it', async () => {
    // Given: a runner with the fork server, and one without it for comparison
    const own = runner({ nodeForkServer: false });
    const spawning = runner({ pythonForkServer: false, nodeForkServer: false, poolSize: 0 });
    await own.warmUp('python', LIMITS.memoryMb);
    const [zygote] = own.forkServerPids();
    const js = (on: ProcessCodeRunner) => on.runAction({ codeblock: { language: 'javascript', code: NODE_IDENTITY }, connection: {}, actionVariables: {}, context: {}, limits: LIMITS });

    // When
    const first = result<NodeIdentity>(await js(own));
    const second = result<NodeIdentity>(await js(own));
    const spawned = result<NodeIdentity>(await js(spawning));

    // Then: fresh processes, children of the fork server, each leading its own process group
    expect(second.pid).not.to.equal(first.pid);
    expect([first.ppid, second.ppid]).to.deep.equal([zygote, zygote]);
    expect(first.pgrp).to.equal(first.pid);
    expect(first.execPath).to.equal(process.execPath);
    // The same environment, working directory shape and signal dispositions as a spawned node
    expect(first.env).to.deep.equal(spawned.env);
    expect(first.home).to.equal(first.cwd);
    expect(first.signals).to.have.length(2);
    expect(first.signals).to.deep.equal(spawned.signals);
    expect(spawned.ppid).to.equal(process.pid);
  });

  it('given the fork server turned off, when a python run comes, then python3 is spawned by the runner itself', async () => {
    const own = runner({ pythonForkServer: false, poolSize: 0 });
    const seen = result<{ ppid: number; runs: number }>(await action(own, STATEFUL));
    expect(seen.ppid).to.equal(process.pid);
    expect(seen.runs).to.equal(1);
    expect(own.forkServerPids()).to.deep.equal([]);
  });

  it('given runAs an unprivileged user, when forked user code tries to signal the fork server, then it is denied and runs as that user', async function () {
    if (process.getuid?.() !== 0) this.skip();
    const own = runner({ poolSize: 0, runAs: { uid: 65534, gid: 65534 }, sandbox: false });
    const code = [
      'import os, signal',
      'def run(connection, action_variables, context):',
      '    try:',
      '        os.kill(os.getppid(), signal.SIGKILL)',
      '        denied = None',
      '    except PermissionError:',
      '        denied = "EPERM"',
      '    return {"uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(), "denied": denied, "home": os.environ["HOME"], "cwd": os.getcwd()}',
    ].join('\n');
    const seen = result<{ uid: number; gid: number; groups: number[]; denied: string | null; home: string; cwd: string }>(await action(own, code));
    expect(seen).to.deep.include({ uid: 65534, gid: 65534, groups: [], denied: 'EPERM' });
    expect(seen.home).to.equal(seen.cwd);
    const [zygote] = own.forkServerPids();
    expect(zygote !== undefined && running(zygote)).to.equal(true);
  });
});
