import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ActionOutcome, RunLimits } from '../../shared/ports/CodeRunner.ts';
import { NODE_IDENTITY, running as alive, until, type NodeIdentity as Identity } from '../../test/support/runtimeProcesses.ts';
import { ForkServer } from './ForkServer.ts';
import { NODE_FORK_ADDON, nodeForkAddonLoads } from './nodeForkProgram.ts';
import { ProcessCodeRunner } from './ProcessCodeRunner.ts';

const RUNNER_FD_KINDS = fileURLToPath(new URL('../../test/support/runnerFdKinds.ts', import.meta.url));
const LIMITS: RunLimits = { timeoutMs: 10_000, memoryMb: 128, maxOutputBytes: 64 * 1024 };

/**
 * What needs threads a forked node does not copy (see runtime/forkserver.cjs): a worker thread that
 * must end, WebAssembly compiled asynchronously with enough functions to be compiled in parallel and
 * a hot loop to be tiered up, the libuv thread pool (fs, crypto), a child process, a timer. (The
 * worker comes first: once V8 posted a background task, as WebAssembly compilation or a full garbage
 * collection do, a worker thread's exit waits for it, and no thread runs it in a forked child;
 * decisions.md, "JavaScript fork server".)
 */
const THREADED = `
const { Worker } = require('node:worker_threads');
const { pbkdf2 } = require('node:crypto');
const { readFile } = require('node:fs/promises');
const { execFileSync } = require('node:child_process');
function wasmModule(count) {
  const leb = (n) => { const out = []; do { let b = n & 127; n >>>= 7; if (n) b |= 128; out.push(b); } while (n); return out; };
  const section = (id, body) => [id, ...leb(body.length), ...body];
  const bodies = [];
  for (let k = 0; k < count; k++) { const code = [0, 0x20, 0, 0x20, 1, 0x6a, 0x41, ...leb(k), 0x6a, 0x0b]; bodies.push(...leb(code.length), ...code); }
  return new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, ...section(1, [1, 0x60, 2, 0x7f, 0x7f, 1, 0x7f]), ...section(3, [...leb(count), ...Array(count).fill(0)]),
    ...section(7, [1, 3, 97, 100, 100, 0, ...leb(count - 1)]), ...section(10, [...leb(count), ...bodies])]);
}
exports.run = async () => {
  const worker = new Worker('require("node:worker_threads").parentPort.postMessage(6 * 7)', { eval: true });
  const message = await new Promise((resolve, reject) => { worker.once('message', resolve); worker.once('error', reject); });
  const workerExit = await new Promise((resolve) => worker.once('exit', resolve));
  const { instance } = await WebAssembly.instantiate(wasmModule(300));
  let hot = 0;
  for (let k = 0; k < 1e6; k++) hot = instance.exports.add(hot & 1023, 1);
  const key = await new Promise((resolve, reject) => pbkdf2('a', 'b', 1000, 8, 'sha256', (error, derived) => (error ? reject(error) : resolve(derived.toString('hex')))));
  const file = (await readFile(__filename, 'utf8')).length > 0;
  const echoed = execFileSync('echo', ['spawned']).toString().trim();
  await new Promise((resolve) => setTimeout(resolve, 5));
  return { wasm: hot, message, workerExit, key, file, echoed };
};
`;

describe('Node fork server: a fresh forked node process per JavaScript run', function () {
  this.timeout(30_000);
  const runners: ProcessCodeRunner[] = [];
  const runner = (options: ConstructorParameters<typeof ProcessCodeRunner>[0] = {}) => {
    const created = new ProcessCodeRunner({ poolSize: 2, interruptGraceMs: 300, ...options });
    runners.push(created);
    return created;
  };
  const js = (on: ProcessCodeRunner, code: string, limits: RunLimits = LIMITS): Promise<ActionOutcome> =>
    on.runAction({ codeblock: { language: 'javascript', code }, connection: {}, actionVariables: {}, context: {}, limits });
  const result = <T>(outcome: ActionOutcome): T => {
    if (!outcome.ok) throw new Error(`action failed: ${JSON.stringify(outcome)}`);
    return outcome.result as T;
  };

  after(async () => {
    await Promise.all(runners.map((r) => r.close()));
  });

  it('given an installed checkout, when the worker looks for the nodefork addon, then npm install has built it and it loads', () => {
    expect(existsSync(NODE_FORK_ADDON), `${NODE_FORK_ADDON} (npm ci runs node-gyp on ops/worker/native)`).to.equal(true);
    expect(nodeForkAddonLoads()).to.equal(true);
  });

  it('given JavaScript runs, when each runs, then it is a fresh child of the node fork server with its own pid, randomness and state, started as a spawned node', async () => {
    // Given: the default runner, and one that spawns node for comparison
    const own = runner();
    const spawning = runner({ pythonForkServer: false, nodeForkServer: false, poolSize: 0 });
    await own.warmUp('javascript', LIMITS.memoryMb);
    const [zygote] = own.nodeForkServerPids();

    // When
    const first = result<Identity>(await js(own, NODE_IDENTITY));
    const second = result<Identity>(await js(own, NODE_IDENTITY));
    const spawned = result<Identity>(await js(spawning, NODE_IDENTITY));

    // Then: two processes forked from the node fork server, each its own group leader
    expect(zygote).to.be.a('number');
    expect([first.ppid, second.ppid]).to.deep.equal([zygote, zygote]);
    expect(second.pid).not.to.equal(first.pid);
    expect([first.pid, second.pid]).to.deep.equal([first.realPid, second.realPid]);
    expect(first.pgrp).to.equal(first.pid);
    // Nothing of one run in the other: module state, Math.random's sequence, crypto's random pool
    expect([first.runs, second.runs]).to.deep.equal([1, 1]);
    expect(second.random).not.to.deep.equal(first.random);
    expect(second.uuid).not.to.equal(first.uuid);
    expect(first.random.every((value) => value >= 0 && value < 1)).to.equal(true);
    // What a spawned node sees: arguments, environment, directory, signal dispositions
    expect(first.argv).to.deep.equal(spawned.argv);
    expect(first.env).to.deep.equal(spawned.env);
    expect(first.home).to.equal(first.cwd);
    expect(first.cwd).not.to.equal(second.cwd);
    expect(first.signals).to.deep.equal(spawned.signals);
  });

  it('given a service holding an inherited fd without close-on-exec, when a forked JavaScript run lists its open fds, then it has the same kinds as an exec\'d runtime, not that fd', async () => {
    // Given: a process whose fd 4 is an inherited pipe (as a supervisor might leave one), running a runner
    const child = spawn(process.execPath, ['--import', 'tsx', RUNNER_FD_KINDS], { stdio: ['ignore', 'pipe', 'inherit', 'ignore', 'pipe'] });
    let printed = '';
    child.stdout?.on('data', (chunk: Buffer) => (printed += chunk.toString('utf8')));
    // When
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    // Then: stdio, the protocol socket and node's own (event loops, wake-ups), nothing else
    expect(code).to.equal(0);
    const kinds = JSON.parse(printed) as { forked: string[]; execd: string[] };
    expect(kinds.execd).to.include('socket:');
    expect(kinds.forked).to.deep.equal(kinds.execd);
  });

  it('given code using worker threads, parallel WebAssembly compilation and tier-up, the libuv pool and child processes, when run, then it runs in a node exec\'d for it and all of it completes', async function () {
    // A forked node never saw the worker's exit in most runs on a loaded 2-core machine (it drains
    // tasks posted to platform threads a forked child does not have): code naming worker_threads
    // gets a node exec'd by the Python fork server. Slow on a loaded machine, so a generous budget:
    // what is asserted is that it completes, and where it ran.
    this.timeout(240_000);
    const own = runner({ poolSize: 0 });
    const seen = result<Record<string, unknown>>(await js(own, `${THREADED}\nconst inner = exports.run; exports.run = async () => ({ ...(await inner()), ppid: process.ppid });`, { ...LIMITS, timeoutMs: 180_000 }));
    expect(seen).to.deep.equal({ wasm: 768, message: 42, workerExit: 0, key: 'a9ad83929ae9ec53', file: true, echoed: 'spawned', ppid: own.forkServerPids()[0] });
    expect(own.nodeForkServerPids()).to.deep.equal([]);
  });

  it('given code using parallel WebAssembly compilation and tier-up, the libuv pool and child processes (no worker threads), when run in a forked node, then all of it completes', async function () {
    this.timeout(240_000);
    const own = runner({ poolSize: 0 });
    const code = THREADED.replace(/^const \{ Worker \}.*$/m, '').replace(/^\s+const worker = [\s\S]*?const workerExit = .*$/m, '  const message = 42, workerExit = 0;');
    expect(code).not.to.include('worker_threads');
    const seen = result<Record<string, unknown>>(await js(own, `${code}\nconst inner = exports.run; exports.run = async () => ({ ...(await inner()), ppid: process.ppid });`, { ...LIMITS, timeoutMs: 180_000 }));
    expect(own.nodeForkServerPids()).to.have.length(1);
    expect(seen).to.deep.equal({ wasm: 768, message: 42, workerExit: 0, key: 'a9ad83929ae9ec53', file: true, echoed: 'spawned', ppid: own.nodeForkServerPids()[0] });
  });

  it('given a forked run whose garbage collections are full ones, when run, then they complete (V8 posts to worker threads the child does not have)', async () => {
    const own = runner({ poolSize: 0 });
    const code = `const gc = (require('node:v8').setFlagsFromString('--expose-gc'), require('node:vm').runInNewContext('gc'));
      exports.run = () => { const kept = []; for (let i = 0; i < 3e5; i++) kept.push({ i, s: 'x' + i, ref: new WeakRef({}) }); gc(); gc(); return kept.length; };`;
    const outcome = await js(own, code, { ...LIMITS, timeoutMs: 8000 });
    expect(outcome).to.deep.include({ ok: true, result: 300_000 });
  });

  it('given two memory limits, when runs of each come, then each limit has its own fork server whose heap limit the run sees', async () => {
    const own = runner({ poolSize: 0 });
    const code = 'exports.run = () => ({ ppid: process.ppid, limitMb: Math.round(require("node:v8").getHeapStatistics().heap_size_limit / 1048576) });';
    const small = result<{ ppid: number; limitMb: number }>(await js(own, code, { ...LIMITS, memoryMb: 64 }));
    const large = result<{ ppid: number; limitMb: number }>(await js(own, code, { ...LIMITS, memoryMb: 256 }));
    expect(small.ppid).not.to.equal(large.ppid);
    expect(own.nodeForkServerPids().sort()).to.deep.equal([small.ppid, large.ppid].sort());
    // V8 adds its young generation to the old space limit.
    expect(small.limitMb).to.be.within(64, 64 + 48);
    expect(large.limitMb).to.be.within(256, 256 + 48);
  });

  it('given the node fork server killed while the pool holds its children, when the next run comes, then the children are stopped and the run succeeds from a new fork server', async () => {
    const own = runner();
    await own.warmUp('javascript', LIMITS.memoryMb);
    const [zygote] = own.nodeForkServerPids();
    const pooled = own.processIds();
    if (zygote === undefined) throw new Error('no node fork server');
    process.kill(zygote, 'SIGKILL');
    // (They die with it, parent-death signal; the runner learns of it a moment later: both awaited.)
    expect(await until(() => !own.nodeForkServerPids().includes(zygote) && pooled.every((pid) => !alive(pid)))).to.equal(true);
    const after = result<Identity>(await js(own, NODE_IDENTITY));
    const [restarted] = own.nodeForkServerPids();
    expect(restarted).to.be.a('number').and.not.equal(zygote);
    expect(after.ppid).to.equal(restarted);
  });

  it('given a run in progress, when the node fork server dies, then the run ends as an error naming it instead of hanging', async () => {
    const own = runner({ poolSize: 0 });
    const outcome = js(own, 'exports.run = () => new Promise(() => {});');
    expect(await until(() => own.processIds().length === 1 && own.nodeForkServerPids().length === 1, 60_000)).to.equal(true);
    const [zygote] = own.nodeForkServerPids();
    const [child] = own.processIds();
    if (zygote === undefined || child === undefined) throw new Error('no processes');
    process.kill(zygote, 'SIGKILL');
    const ended = await outcome;
    expect(ended.ok).to.equal(false);
    expect(!ended.ok && ended.message).to.include('node fork server ended');
    expect(await until(() => !alive(child))).to.equal(true);
  });

  it('given a runner with pooled and busy forked node processes, when closed, then neither they nor the node fork server are left', async () => {
    const own = runner();
    await own.warmUp('javascript', LIMITS.memoryMb);
    const outcome = js(own, 'exports.run = () => new Promise(() => {});');
    expect(await until(() => own.processIds().length >= 3, 60_000)).to.equal(true);
    const pids = [...own.processIds(), ...own.nodeForkServerPids()];
    await own.close();
    expect(pids.filter(alive)).to.deep.equal([]);
    expect((await outcome).ok).to.equal(false);
  });

  it('given runAs an unprivileged user, when forked JavaScript tries to signal the node fork server, then it is denied and runs as that user', async function () {
    if (process.getuid?.() !== 0) this.skip();
    const own = runner({ poolSize: 0, runAs: { uid: 65534, gid: 65534 }, sandbox: false });
    const code = `exports.run = () => {
      let denied = null;
      try { process.kill(process.ppid, 'SIGKILL'); } catch (error) { denied = error.code; }
      return { uid: process.getuid(), gid: process.getgid(), groups: process.getgroups(), denied, home: process.env.HOME, cwd: process.cwd() };
    };`;
    const seen = result<{ uid: number; gid: number; groups: number[]; denied: string | null; home: string; cwd: string }>(await js(own, code));
    expect(seen).to.deep.include({ uid: 65534, gid: 65534, denied: 'EPERM' });
    // No supplementary group is left (node's getgroups lists the effective gid too).
    expect(seen.groups.filter((gid) => gid !== 65534)).to.deep.equal([]);
    expect(seen.home).to.equal(seen.cwd);
    const [zygote] = own.nodeForkServerPids();
    expect(zygote !== undefined && alive(zygote)).to.equal(true);
  });

  it('given a fork server program that dies before it is ready, when forks come, then they fail with its output and after two such starts it reports itself broken', async () => {
    // Given: a "fork server" that says something and exits at once
    const server = new ForkServer({ executable: process.execPath, program: { label: 'node', args: ['-e', 'console.error("no such flag"); process.exit(9)'] } });
    const fork = () =>
      new Promise<string>((resolve) => {
        server.fork({ dir: '/nonexistent/never-made', memoryMb: 64 }, { data: () => {}, output: () => {}, exit: () => resolve('exit'), failed: (_reason, message) => resolve(message) });
      });
    try {
      // When / Then
      const first = await fork();
      expect(first).to.include('the node fork server ended (exit code 9)').and.include('no such flag');
      expect(server.broken).to.equal(false);
      await fork();
      expect(server.broken).to.equal(true);
    } finally {
      await server.close();
    }
  });

  it('given the node fork server turned off, when a JavaScript run comes, then node is exec\'d and no node fork server runs', async () => {
    const own = runner({ nodeForkServer: false, pythonForkServer: false, poolSize: 0 });
    const seen = result<Identity>(await js(own, NODE_IDENTITY));
    expect(seen.ppid).to.equal(process.pid);
    expect(own.nodeForkServerPids()).to.deep.equal([]);
  });
});
