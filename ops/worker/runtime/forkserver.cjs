'use strict';
// Fork server ("zygote") of the JavaScript runtime (ops/worker/ForkServer.ts), the node twin of
// forkserver.py: the same control protocol and the same child set-up, see that file's docstring.
//
// Why: a node start costs ~20-30 ms of CPU (isolate deserialisation, bootstrap, the runtime shim's
// modules), which capped fresh-process JavaScript runs near 40-60/s on 2 cores. This process does
// that work once; each run forks it (~7-8 ms of CPU per no-op run in all, half of it the kernel's
// copy-on-write) and gets a process that never ran user
// code before, like a Python run from forkserver.py. Node has no fork: the native addon
// (../native/nodefork.c) provides it and says what a forked node needs.
//
// What a forked child differs in from a spawned node, and how each is handled here:
// - V8 runs single-threaded (--single-threaded: no background GC or compile threads, which fork does
//   not copy) and without WebAssembly dynamic tiering (--no-wasm-dynamic-tiering: its background
//   tier-up never finishes in a child); the first WebAssembly compile is done here once, since its
//   one-time set-up posts to a background thread too. process.execArgv shows these flags.
// - The child ends with _exit (never node's exit path, which joins the missing threads).
// - --no-memory-reducer: V8's memory reducer works from delayed tasks and timers armed here, where
//   the event loop never runs; with it, every child started an incremental marking and a compacting
//   collection in its first milliseconds (perf: marking visitors in the children), which wrote, so
//   copied, most of the shared heap. Idle reuse processes keep their heap size instead.
// - The missing threads were waiting on condition variables, which a child's post would block on
//   forever: native/forkcond.c, preloaded here (LD_PRELOAD, removed from the child's environment),
//   re-initialises those in each child. Tasks posted in a child never run: a worker thread's exit
//   then never comes (docs/decisions.md, "JavaScript fork server").
// - process.pid is cached by node at start: set to the child's own. Math.random's state is
//   per isolate and would be the same in every child: replaced by one drawn from the kernel's CSPRNG
//   (crypto, whose OpenSSL generator reseeds itself after a fork). process.argv reads as if spawned.
// - Built-in modules a run might load are loaded here once: with the V8 flags above node's code
//   cache does not apply, so a child would compile each one from source (http: ~15 ms). They, and the
//   runtime, are compiled eagerly, and rehearse() runs once what each run's process runs first, so
//   that a child compiles almost nothing but user code (child CPU per no-op run ~12 -> ~6.5 ms).
// - process.uptime() and performance.now() count from this process's start, not the child's.
// Nothing else of this process reaches a child: it keeps no state between forks but pending
// control bytes (wiped in the child); Math.random is replaced in each child and crypto.randomUUID's
// pool is never filled here.
//
// Usage: node --no-memory-reducer --single-threaded --no-wasm-dynamic-tiering --max-old-space-size=<memoryMb>
//          forkserver.cjs <memoryMb> <socket path> [<uid> <gid>]
// Control channel: fd 3, JSON lines (see forkserver.py). The memory limit is this process's own
// (V8 fixes the heap limit at start): the runner starts one fork server per memory limit.

const { existsSync, mkdirSync, readdirSync, readFileSync, readSync, rmdirSync, rmSync, writeFileSync, writeSync } = require('node:fs');
const { constants } = require('node:os');
const path = require('node:path');

const CONTROL_FD = 3;
const native = require('../native/build/Release/nodefork.node');
// Sandbox (forkserver.py's docstring): dies with the runner, reaps what runs leave behind, and
// gives each child its own memory cgroup when it can.
const PARENT_PID = Number(process.env.CODERUN_PARENT_PID ?? 0);
delete process.env.CODERUN_PARENT_PID;
if (PARENT_PID > 0) native.dieWithParent(PARENT_PID, true);
native.becomeSubreaper();
// Inside a bubblewrap sandbox (not root): the runs have this process's uid. Non-dumpable (inherited
// by every fork), and what runs leave behind is killed (killOrphans): see forkserver.py.
const SANDBOXED = process.env.CODERUN_SANDBOX === 'bwrap';
delete process.env.CODERUN_SANDBOX;
if (SANDBOXED) native.setDumpable(false);
// Whatever the service inherited and passed on (fds without close-on-exec beyond the control
// channel) is nobody's business here, and would reach every child.
native.closeInherited(CONTROL_FD + 1);
// V8 compiles a function at its first call, and every child would compile again each function of
// the runtime and of the modules below that this process never called (with the flags above node's
// code cache does not apply either): V8 compiles eagerly while they load, and lazily again before
// any fork, so user code compiles as in any node. rehearse() below covers what node had loaded before.
const setV8Flags = require('./v8Flags.cjs').v8FlagSetter();
setV8Flags?.('--no-lazy');
const runtime = require('./runtime.cjs');

const [memoryArg, SOCKET_PATH, uidArg, gidArg] = process.argv.slice(2);
const MEMORY_MB = Number(memoryArg);
const SERVER_PID = process.pid;
const RUN_AS = uidArg !== undefined ? { uid: Number(uidArg), gid: Number(gidArg) } : null;
const SIGNAL_NAMES = new Map(Object.entries(constants.signals).map(([name, number]) => [number, name]));

/** Built-in modules user code commonly loads (no deprecated or experimental ones, none with side effects on load). */
const PRELOADED = [
  'assert', 'async_hooks', 'buffer', 'child_process', 'crypto', 'dgram', 'dns', 'dns/promises', 'events', 'fs', 'fs/promises', 'http', 'http2',
  'https', 'module', 'net', 'os', 'path', 'perf_hooks', 'querystring', 'readline', 'stream', 'stream/promises', 'stream/web', 'string_decoder',
  'timers/promises', 'tls', 'tty', 'url', 'util', 'v8', 'vm', 'worker_threads', 'zlib',
];
for (const name of PRELOADED) {
  try {
    require(`node:${name}`);
  } catch {
    // not in this node: loaded by the child if it asks
  }
}
setV8Flags?.('--lazy');
// (module (func (export "f") (result i32) i32.const 1)): WebAssembly's one-time set-up, done here.
new WebAssembly.Instance(new WebAssembly.Module(Uint8Array.of(0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 127, 3, 2, 1, 0, 7, 5, 1, 1, 102, 0, 0, 10, 6, 1, 4, 0, 65, 1, 11)));

/** This process's memory cgroup directory (cgroup v1), or null. */
function ownMemoryCgroup() {
  try {
    for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
      const [, controllers, where] = line.split(/:(.*?):/);
      if (controllers !== undefined && controllers.split(',').includes('memory')) {
        const dir = `/sys/fs/cgroup/memory${where}`;
        return existsSync(dir) ? dir : null;
      }
    }
  } catch {
    // no /proc
  }
  return null;
}

/** The pids in a cgroup (strings), or null when it is gone. */
function cgroupProcs(dir) {
  try {
    return readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean);
  } catch (error) {
    return error.code === 'ENOENT' ? null : [];
  }
}

function killAll(pids) {
  for (const pid of pids) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      // gone
    }
  }
}

/** SIGKILL to every process in a run cgroup (its tasks leaf), then rmdir both; true once it is gone. */
function killCgroup(dir) {
  const tasks = path.join(dir, 't');
  killAll(cgroupProcs(tasks) ?? []);
  try {
    for (const level of [tasks, dir]) {
      try {
        rmdirSync(level);
      } catch (error) {
        if (error.code !== 'ENOENT') throw error;
      }
    }
    return true;
  } catch {
    return false;
  }
}

const isRunCgroup = (name) => /^c\d+$/.test(name);

/** coderun-<pid> under the own memory cgroup when writable (removing those of dead fork servers), or null. */
function makeCgroupBase() {
  const own = ownMemoryCgroup();
  if (own === null || process.env.CODERUN_CGROUPS === 'off') return null;
  try {
    for (const name of readdirSync(own)) {
      const match = /^coderun-(\d+)$/.exec(name);
      if (!match) continue;
      try {
        process.kill(Number(match[1]), 0);
        continue;
      } catch (error) {
        if (error.code !== 'ESRCH') continue;
      }
      const stale = path.join(own, name);
      for (const child of readdirSync(stale)) {
        if (isRunCgroup(child)) killCgroup(path.join(stale, child));
      }
      try {
        rmdirSync(stale);
      } catch {
        // still draining: the next start
      }
    }
    const base = path.join(own, `coderun-${process.pid}`);
    mkdirSync(base);
    return base;
  } catch {
    return null;
  }
}

const CGROUP_BASE = makeCgroupBase();
/** Run cgroups ({dir, limitMb, oomKills}) of children not reaped yet, by pid. */
const runCgroups = new Map();
/** Run cgroups whose processes were killed but are not gone yet. */
const draining = new Set();
/*
 * A run cgroup is two levels: c<n> holds the memory limit, c<n>/t the processes (see forkserver.py:
 * node sizes worker isolates from the limit of its own cgroup, and a small one left forked workers
 * waiting forever for their exit).
 */
/**
 * Empty run cgroups, reused (mkdir + rmdir per run were ~160 us). One still charged with more than
 * REUSE_USAGE_BYTES once its processes are gone (files a run left in a tmpfs) is removed instead.
 */
const freeCgroups = [];
const FREE_CGROUPS_MAX = 64;
const REUSE_USAGE_BYTES = 4 << 20;
let cgroupCount = 0;

function setCgroupLimit(entry, treeMb) {
  if (entry.limitMb === treeMb) return true;
  try {
    writeFileSync(path.join(entry.dir, 'memory.limit_in_bytes'), treeMb > 0 ? String(treeMb * 1024 * 1024) : '-1');
  } catch {
    return false;
  }
  entry.limitMb = treeMb;
  return true;
}

/** A run cgroup limited to treeMb (0: no limit), from the pool or new; throws when none can be made. */
function takeCgroup(treeMb) {
  while (freeCgroups.length > 0) {
    const entry = freeCgroups.pop();
    if (setCgroupLimit(entry, treeMb)) return entry;
    killCgroup(entry.dir);
  }
  cgroupCount += 1;
  const entry = { dir: path.join(CGROUP_BASE, `c${cgroupCount}`), limitMb: null, oomKills: 0 };
  mkdirSync(path.join(entry.dir, 't'), { recursive: true, mode: 0o755 });
  if (!setCgroupLimit(entry, treeMb)) {
    killCgroup(entry.dir);
    throw new Error("could not set the memory limit of the run's cgroup");
  }
  return entry;
}

/** How many times the kernel killed a process of this cgroup at its memory limit (cgroup v1, 4.13+). */
function oomKills(dir) {
  let kills = 0;
  for (const level of [dir, path.join(dir, 't')]) {
    try {
      const match = /^oom_kill (\d+)$/m.exec(readFileSync(path.join(level, 'memory.oom_control'), 'utf8'));
      kills += match === null ? 0 : Number(match[1]);
    } catch {
      // gone
    }
  }
  return kills;
}

/** After its run: SIGKILL to what is left in it; once empty, back to the pool (or removed). True when settled. */
function settleCgroup(entry) {
  const pids = cgroupProcs(path.join(entry.dir, 't'));
  if (pids === null) return true;
  if (pids.length > 0) {
    killAll(pids);
    return false;
  }
  let usage = REUSE_USAGE_BYTES;
  try {
    usage = Number(readFileSync(path.join(entry.dir, 'memory.usage_in_bytes'), 'utf8'));
  } catch {
    // removed below
  }
  if (usage < REUSE_USAGE_BYTES && freeCgroups.length < FREE_CGROUPS_MAX) {
    freeCgroups.push(entry);
    return true;
  }
  return killCgroup(entry.dir);
}

/** The child's end: a kill at its cgroup's limit is reported; whatever it started is killed. */
function sweep(pid, report) {
  const entry = runCgroups.get(pid);
  if (entry === undefined) return;
  runCgroups.delete(pid);
  const kills = oomKills(entry.dir);
  if (report.signal === 'SIGKILL' && kills > entry.oomKills) report.memory = true;
  entry.oomKills = kills;
  if (!settleCgroup(entry)) draining.add(entry);
}

function drain() {
  for (const entry of draining) if (settleCgroup(entry)) draining.delete(entry);
}

/** Each child's run directory, removed here if the runner dies before it could remove them. */
const runDirs = new Map();

/**
 * The sandboxed runs alive, supervised here (native/sandbox.c): pid -> {events: its pids.events,
 * baseline: that count at the fork, spec: its limits, hit: the limit it hit or null}.
 */
const supervised = new Map();
const SUPERVISE_MS = 100;
/** What native.limitHit answers: the limit, its setting and the spec key of its value. */
const LIMITS = new Map([
  [1, ['processes', 'WORKER_MAX_PROCESSES', 'limit_pids']],
  [2, ['disk', 'WORKER_DISK_MB', 'disk_mb']],
  [3, ['shared memory', 'WORKER_SHM_MB', 'shm_mb']],
]);

/** A sandboxed run that hit a limit of its sandbox is killed (its pid namespace with it); its exit report names the limit. */
function supervise() {
  for (const [pid, entry] of supervised) {
    if (entry.hit !== null) continue;
    const known = LIMITS.get(native.limitHit(pid, entry.events, entry.baseline));
    if (known === undefined) continue;
    const [limit, setting, key] = known;
    entry.hit = { limit, setting, value: Number.isInteger(entry.spec[key]) ? entry.spec[key] : 0 };
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

function send(message) {
  const data = Buffer.from(`${JSON.stringify(message)}\n`);
  for (let offset = 0; offset < data.length; ) offset += writeSync(CONTROL_FD, data, offset);
}

/**
 * Serves fork requests until one of them returns in a forked child (its request) or the runner is
 * gone (null). Never returns to node's event loop: a fork always happens with an idle loop.
 */
function serve() {
  const chunk = Buffer.alloc(65536);
  let pending = Buffer.alloc(0);
  send({ op: 'ready', pid: process.pid, cgroups: CGROUP_BASE !== null });
  let orphans = false;
  for (;;) {
    const events = native.waitEvents(CONTROL_FD, draining.size > 0 ? 50 : orphans ? 5 : supervised.size > 0 ? SUPERVISE_MS : -1);
    // The runner died (parent-death signal): as at the end of the control channel.
    if (events.terminated) return null;
    drain();
    if (supervised.size > 0) supervise();
    for (const [pid, code, signal] of events.exits) {
      runDirs.delete(pid);
      const report = { op: 'exit', pid, code, signal: signal === null ? null : (SIGNAL_NAMES.get(signal) ?? `SIG${signal}`) };
      const entry = supervised.get(pid);
      supervised.delete(pid);
      if (entry !== undefined && entry.hit !== null) report.limit = entry.hit;
      // Whatever the run started is killed with it (setsid and double forks included).
      sweep(pid, report);
      send(report);
    }
    // Killed orphans end without waking waitEvents (no pidfd for them): polled every 5 ms until none is left.
    if (SANDBOXED && (events.exits.length > 0 || orphans)) orphans = killOrphans();
    if (!events.control) continue;
    let length;
    try {
      length = readSync(CONTROL_FD, chunk, 0, chunk.length, null);
    } catch (error) {
      if (error.code === 'EAGAIN' || error.code === 'EINTR') continue;
      throw error;
    }
    if (length === 0) return null;
    pending = Buffer.concat([pending, chunk.subarray(0, length)]);
    for (let end = pending.indexOf(10); end !== -1; end = pending.indexOf(10)) {
      const request = JSON.parse(pending.subarray(0, end).toString('utf8'));
      pending = pending.subarray(end + 1);
      if (request.op !== 'fork') continue;
      if (fork(request) === 0) {
        // Other forks' tokens are no business of this child.
        pending.fill(0);
        chunk.fill(0);
        return request;
      }
    }
  }
}

/**
 * Children that are not runs (orphans reparented here) are killed: forkserver.py, kill_orphans.
 * Whether there were any (ended ones included, until reaped).
 */
function killOrphans() {
  let pids;
  try {
    pids = readFileSync(`/proc/self/task/${SERVER_PID}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
  } catch {
    return false;
  }
  let found = false;
  for (const pid of pids) {
    if (runDirs.has(pid)) continue;
    found = true;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  return found;
}

/** 0 in the child, the child's pid here (reported), -1 when the fork failed (reported). */
function fork(request) {
  let pid;
  let cgroup = null;
  try {
    if (CGROUP_BASE !== null) cgroup = takeCgroup(Number.isInteger(request.treeMb) ? request.treeMb : 0);
    const isolated = request.sandbox !== null && typeof request.sandbox === 'object';
    // The pooled cgroup's count so far: only what this run adds is its.
    const events = isolated && typeof request.sandbox.pids_events === 'string' ? request.sandbox.pids_events : '';
    const baseline = events ? native.pidsLimitHits(events) : -1;
    // Sandboxed: the child is pid 1 of a pid namespace of its own (no second fork in the sandbox).
    pid = native.forkChild(isolated);
    if (isolated && pid !== 0) supervised.set(pid, { events, baseline, spec: request.sandbox, hit: null });
  } catch (error) {
    if (cgroup !== null) freeCgroups.push(cgroup);
    send({ op: 'fork_failed', token: request.token, error: error.message });
    return -1;
  }
  if (pid === 0) {
    request.cgroupDir = cgroup === null ? '' : path.join(cgroup.dir, 't');
    return 0;
  }
  // A sandboxed run's directory is in its own tmpfs, gone with it: nothing to remove on the host.
  runDirs.set(pid, request.sandbox ? null : request.dir);
  if (cgroup !== null) runCgroups.set(pid, cgroup);
  send({ op: 'forked', token: request.token, pid, ...(cgroup === null ? {} : { cgroup: path.join(cgroup.dir, 't') }) });
  return pid;
}

/** Math.random from a pool of CSPRNG words (53 bits per number, as V8's), refilled when used up. */
function reseedMathRandom() {
  const { randomFillSync } = require('node:crypto');
  const words = new Uint32Array(1024);
  let next = words.length;
  const random = function random() {
    if (next >= words.length) {
      randomFillSync(words);
      next = 0;
    }
    const high = words[next++] >>> 5;
    const low = words[next++] >>> 6;
    return (high * 67108864 + low) / 9007199254740992;
  };
  Object.defineProperty(Math, 'random', { value: random, writable: true, enumerable: false, configurable: true });
}

/** In the forked child: a runtime process of its own, then the run protocol until the runner is gone. */
function becomeRuntime(request) {
  const pid = native.ownPid();
  Object.defineProperty(process, 'pid', { value: pid, writable: false, enumerable: true, configurable: true });
  const hello = (channel, extra) => `${JSON.stringify({ token: request.token, pid, channel, ...extra })}\n`;
  // stderr on a connection of its own (logged apart from stdout), when the addon can: an addon built
  // before it connects stdout+stderr as one, and the output hello then says nothing of a split.
  const split = native.splitsStderr === true;
  const uid = Number.isInteger(request.uid) ? request.uid : RUN_AS ? RUN_AS.uid : -1;
  const gid = Number.isInteger(request.gid) ? request.gid : RUN_AS ? RUN_AS.gid : -1;
  // The sandbox's hellos name the run by its pid here, which only the sandbox knows (it is pid 1 of its own namespace).
  const sandboxHello = (channel, extra) => `${JSON.stringify({ token: request.token, channel, ...extra })}\n`;
  const sandbox = request.sandbox !== null && typeof request.sandbox === 'object' ? sandboxSpec(request, uid, gid, [sandboxHello('output', { split: true }), sandboxHello('error'), sandboxHello('protocol')]) : null;
  if (sandbox !== null && !split) throw new Error('run sandbox: the nodefork addon is too old (rebuild it: npm ci)');
  native.becomeChild({
    ...(sandbox !== null ? { sandbox } : {}),
    socketPath: SOCKET_PATH,
    outputHello: hello('output', split ? { split: true } : {}),
    ...(split ? { errorHello: hello('error') } : {}),
    protocolHello: hello('protocol'),
    dir: request.dir,
    create: request.create === true,
    uid: Number.isInteger(request.uid) ? request.uid : RUN_AS ? RUN_AS.uid : -1,
    gid: Number.isInteger(request.gid) ? request.gid : RUN_AS ? RUN_AS.gid : -1,
    controlFd: CONTROL_FD,
    parentPid: SERVER_PID,
    cgroup: request.cgroupDir ?? '',
  });
  process.chdir(request.dir);
  // Preloaded into the fork server for its forks (native/forkcond.c), not for what user code starts.
  delete process.env.LD_PRELOAD;
  process.env.HOME = request.dir;
  process.env.TMPDIR = request.dir;
  process.argv = [process.execPath, path.join(__dirname, 'runtime.cjs'), String(MEMORY_MB)];
  reseedMathRandom();
  // Whatever ends the process ends it with _exit (see the top of this file).
  process.on('exit', (code) => native.exit(code ?? 0));
  runtime.main({ exit: native.exit });
}

/**
 * The spec of the run's sandbox for native/sandbox.c (as forkserver.py's isolate() writes it): its
 * layout, limits and cgroups from the request, and the three hellos without their closing brace (the
 * sandbox appends the run's pid). Values with a newline would forge lines: refused.
 */
function sandboxSpec(request, uid, gid, hellos) {
  const spec = request.sandbox;
  const lines = [`parent=${SERVER_PID}`, `uid=${uid}`, `gid=${gid}`, `dir=${request.dir}`];
  for (const key of ['disk_mb', 'shm_mb', 'inodes', 'net']) {
    if (spec[key] !== undefined) lines.push(`${key}=${spec[key]}`);
  }
  for (const [key, list] of [['ro', spec.ro], ['hide', spec.hide], ['ro', spec.after], ['join', spec.join]]) {
    for (const value of Array.isArray(list) ? list : []) lines.push(`${key}=${value}`);
  }
  hellos.forEach((text, index) => lines.push(`hello${index + 1}=${text.trimEnd().slice(0, -1)}`));
  if (lines.some((line) => line.includes('\n'))) throw new Error('run sandbox: a value has a newline');
  return lines.join('\n');
}

/**
 * Runs once what every run's process runs first, so that it is compiled here rather than in each
 * child (V8 compiles a function at its first call; the flags above cost node its code cache):
 * JSON lines over a Unix socket with utf8 decoding, both user module forms loaded by require().
 * Own files in its own directory, every handle closed before `done`; no user code.
 */
function rehearse(done) {
  const net = require('node:net');
  const { mkdirSync, rmSync, writeFileSync } = require('node:fs');
  const dir = path.join(process.cwd(), 'rehearsal');
  mkdirSync(dir, { mode: 0o700 });
  let finished = false;
  const finish = () => {
    if (finished) return;
    finished = true;
    rmSync(dir, { recursive: true, force: true });
    // Serving starts from a fresh turn of the loop, nothing of the rehearsal left queued.
    setImmediate(done);
  };
  try {
    for (const [name, code] of [['esm.js', 'export function run() { return null; }\n'], ['cjs.js', 'exports.run = () => null;\n']]) {
      const file = path.join(dir, name);
      writeFileSync(file, code, { mode: 0o600 });
      require(file).run();
      delete require.cache[file];
    }
  } catch {
    // a node without require(esm): nothing to warm there
  }
  const server = net.createServer((socket) => {
    socket.setEncoding('utf8');
    socket.on('data', (text) => {
      if (text.includes('\n')) socket.end(`${JSON.stringify({ id: 1, ok: true, value: null })}\n`);
    });
  });
  server.on('error', finish);
  server.listen(path.join(dir, 's'), () => {
    const client = net.connect(path.join(dir, 's'));
    client.setEncoding('utf8');
    client.on('data', () => {});
    client.on('error', () => {});
    client.on('close', () => server.close(() => finish()));
    client.write(`${JSON.stringify({ id: 1, op: 'exec', args: [{}, {}, {}] })}\n`);
  });
}

function start() {
  let request = null;
  try {
    request = serve();
  } catch (error) {
    writeSync(2, `node fork server: ${error.stack ?? error}\n`);
    process.exitCode = 70;
  }
  if (request !== null) runChild(request);
  else cleanup();
}

/** The runner is gone: what the runs left is killed and their cgroups removed (<= 1 s); children die with this process. */
function cleanup() {
  for (const pid of runDirs.keys()) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  if (CGROUP_BASE !== null) {
    try {
      for (let attempt = 0; attempt < 50; attempt++) {
        native.waitEvents(-1, 0);
        // The run cgroups are named by pid; the rest of the listing is the cgroup's own control files.
        const runs = readdirSync(CGROUP_BASE).filter(isRunCgroup);
        const left = runs.filter((name) => !killCgroup(path.join(CGROUP_BASE, name)));
        if (left.length === 0) break;
        native.waitEvents(-1, 20);
      }
      rmdirSync(CGROUP_BASE);
    } catch {
      // still draining: removed by the next fork server's start
    }
  }
  // The runner can no longer remove its runs' directories (coderun-* left in the temp dir).
  for (const dir of runDirs.values()) {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // best effort
    }
  }
}

/** The forked child, whatever happens: a runtime, or an exit with the reason on stderr. */
function runChild(request) {
  try {
    becomeRuntime(request);
  } catch (error) {
    try {
      writeSync(2, `node fork server child: ${error.stack ?? error}\n`);
    } finally {
      native.exit(70);
    }
  }
}

rehearse(start);
