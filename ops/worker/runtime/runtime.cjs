'use strict';
// JavaScript runtime shim for the sandboxed code runner (ops/worker/ProcessCodeRunner.ts).
//
// Protocol: JSON lines on fd 3 (a socket pair made by the parent), both directions; the same
// messages as runtime.py (load, call, reset, recycle, exec: see its docstring), plus
// {"op": "abandon", "id": n}: answer call n now with an `Interrupted` error (a pending promise
// cannot be stopped; its late result is dropped), or for an exec: give up its current step (user
// call or wait between polls) as runtime.py does on SIGINT, then go on to finish.
// fd 0 is /dev/null; fd 1 and 2 belong to the user code and are captured, capped, by the parent.
//
// Module form: the code is saved as `user_code.js` (no package.json) and loaded with require().
// Node's syntax detection (20.19+) makes it an ES module when it uses import/export, CommonJS
// otherwise; require() of an ES module (20.19+) runs it synchronously unless it uses top-level
// await, which is then loaded with import() instead. Functions come from named exports
// (`export function run(connection, payload, context)`, `exports.run = ...`) or from the default
// export / `module.exports` object. They may be async.
//
// Start-up cost: by default every JavaScript process is forked from the node fork server
// (forkserver.cjs), which loaded this module once; without it, each starts a fresh node (measure it
// with ops/worker/runtimeStartBench.run.ts). For that case this file is CommonJS because an ES module entry point
// makes node set up its whole ES module loader before the first line runs (~6 ms of CPU, ~16 ms
// with the heap flag below), and so does a first import() of user code, where require() of the
// same module costs ~0.6 ms; it loads no built-in module it can do without (no readline); and it
// loads its built-ins while V8's flags are the defaults (below).
// Usage: node --max-old-space-size=<memoryMb> runtime.cjs <memoryMb>   (or main() from forkserver.cjs)

// Node ships a V8 code cache for its built-in modules, which V8 rejects when any V8 flag differs
// from its default (the cache carries a hash of the flags): with --max-old-space-size every built-in
// loaded after bootstrap is compiled from source (net: ~9 ms of CPU instead of ~2.5). The heap
// limit was fixed when the isolate was created, before this line; V8 only reads the flag again
// when it creates another isolate (worker_threads). So the flag goes back to its default while
// the shim loads its own modules, and is put back before any user code runs: user code, and any
// worker it starts, sees exactly the flags the process was started with.
const { v8FlagSetter } = require('./v8Flags.cjs');

const heapFlag = process.execArgv.findLast((arg) => /^--max[-_]old[-_]space[-_]size=\d+$/.test(arg));
const setV8Flags = heapFlag ? v8FlagSetter() : null;
setV8Flags?.('--max-old-space-size=0');

const { chmodSync, lstatSync, mkdirSync, readdirSync, renameSync, rmdirSync, rmSync, unlinkSync, writeFileSync } = require('node:fs');
const net = require('node:net');
const path = require('node:path');
// Loaded by node's bootstrap already (the globals come from it): no cost at start.
const timers = require('node:timers');
const { pathToFileURL } = require('node:url');

let MEMORY_MB = 0;
const NAMES = ['initialize', 'run', 'check_completion', 'finish'];
const TRACEBACK_LIMIT = 8192;

class ExitAttempt extends Error {
  constructor(how) {
    super(`operator code called ${how}: ending the runtime process is not allowed`);
    this.name = 'ExitAttempt';
  }
}

// Set by main(): how this process ends itself, its own directory and its protocol channel.
let hardExit = typeof process.reallyExit === 'function' ? process.reallyExit.bind(process) : process.exit.bind(process);
// The process's own directory (its cwd at start): reuse runs happen in subdirectories of it, and a
// recycle clears it.
let BASE = '';
let channel = null;

function send(text) {
  channel.write(text + '\n');
}

function describe(error, invalid = false) {
  let message;
  let type = 'Error';
  let traceback = '';
  if (error instanceof Error) {
    type = error.name;
    message = error instanceof ExitAttempt ? error.message : `${error.name}: ${error.message}`;
    if (error instanceof RangeError && /allocation failed/i.test(error.message)) {
      message = `memory limit of ${MEMORY_MB} MB exceeded (${error.name}: ${error.message})`;
    }
    traceback = String(error.stack ?? '').slice(-TRACEBACK_LIMIT);
  } else {
    message = `thrown value: ${safeString(error)}`;
  }
  return invalid ? { type, message, traceback, invalid: true } : { type, message, traceback };
}

function safeString(value) {
  try {
    return typeof value === 'string' ? value : JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

class NotSerialisable extends Error {}

/** JSON text of `value`, refusing what JSON.stringify would silently change (functions, Map, NaN...). */
function strictJson(value, fnName) {
  const seen = new Set();
  const bad = (path, what) => new NotSerialisable(`result of ${fnName} contains ${what} at ${path}, which is not JSON-serialisable`);
  const copy = (input, path) => {
    let v = input;
    if (v !== null && typeof v === 'object' && typeof v.toJSON === 'function') v = v.toJSON();
    switch (typeof v) {
      case 'string':
      case 'boolean':
      case 'undefined':
        return v;
      case 'number':
        if (!Number.isFinite(v)) throw bad(path, String(v));
        return v;
      case 'object': {
        if (v === null) return null;
        if (seen.has(v)) throw bad(path, 'a circular reference');
        seen.add(v);
        let out;
        if (Array.isArray(v)) {
          out = v.map((item, i) => copy(item, `${path}[${i}]`) ?? null);
        } else {
          const proto = Object.getPrototypeOf(v);
          if (proto !== Object.prototype && proto !== null) throw bad(path, `a ${v.constructor?.name ?? 'non-plain'} object`);
          out = {};
          for (const key of Object.keys(v)) {
            const item = copy(v[key], `${path}.${key}`);
            if (item !== undefined) out[key] = item;
          }
        }
        seen.delete(v);
        return out;
      }
      default:
        throw bad(path, `a ${typeof v}`);
    }
  };
  return JSON.stringify(copy(value, '$') ?? null);
}

let functions = new Map();
/**
 * Reuse: the module the last exec loaded from the code it was sent, kept for the next exec of the
 * same code in this process (see Exec.load). Null after any other load, a reset or a recycle op.
 */
let warm = null;
/** Calls in flight: id -> true until answered (abandon answers early). */
const pending = new Map();

/**
 * The user module's exports: require() (synchronous, and far cheaper than a first import(), which
 * sets up the whole ES module loader: ~6 ms of CPU), import() for the ES modules require() cannot run.
 */
async function loadModule(file) {
  try {
    return require(file);
  } catch (error) {
    // ERR_REQUIRE_ASYNC_MODULE: top-level await (thrown before the module ran, so it runs once).
    // ERR_REQUIRE_ESM: a Node without require(esm).
    if (error?.code !== 'ERR_REQUIRE_ASYNC_MODULE' && error?.code !== 'ERR_REQUIRE_ESM') throw error;
    return import(pathToFileURL(file).href);
  }
}

async function load(file) {
  const exported = Object(await loadModule(file));
  // An ES module namespace (named exports are called with `this` undefined, as ES functions are)
  // or a CommonJS module.exports (its functions are called on it, like exports.run()).
  const namespace = exported[Symbol.toStringTag] === 'Module';
  const holder = exported.default !== null && typeof exported.default === 'object' ? exported.default : null;
  functions = new Map();
  for (const name of NAMES) {
    if (typeof exported[name] === 'function') functions.set(name, { fn: exported[name], self: namespace ? undefined : exported });
    else if (holder && typeof holder[name] === 'function') functions.set(name, { fn: holder[name], self: holder });
  }
  return [...functions.keys()];
}

// Output marks, as runtime.py writes them (see its write_mark): what goes through process.stdout /
// process.stderr (console.log, console.error) is preceded on the same stream by "\x1e<token>:<step>\x1e"
// whenever the step changed since that stream's last mark, so that the runner, which reads output
// apart from the protocol, knows which step wrote it. No token (the runner does not log this run's
// output line by line): no marks; a run that writes nothing writes none either.
let markToken = null;
let stepNow = 'load';
/** stream -> the step its last mark named, in the current run. */
const marked = new Map();
/** stream -> its own write, which marks go through (in order with what the code writes). */
const writes = new Map();

function writeMark(stream) {
  marked.set(stream, stepNow);
  writes.get(stream).call(stream, `\x1e${markToken}:${stepNow}\x1e`);
}

/** A run starts: its token (null: no marks), its first step (load), no stream marked yet. */
function beginMarks(token) {
  markToken = typeof token === 'string' && /^[A-Za-z0-9]{1,64}$/.test(token) ? token : null;
  stepNow = 'load';
  marked.clear();
}

/** The run's next step; a stream written in this run is marked at once (a child process writing to it is then under this step too). */
function setStep(step) {
  if (step === stepNow) return;
  stepNow = step;
  if (markToken === null) return;
  for (const stream of marked.keys()) writeMark(stream);
}

function markStreams() {
  for (const stream of [process.stdout, process.stderr]) {
    const write = stream.write;
    writes.set(stream, write);
    stream.write = function markedWrite(...args) {
      if (markToken !== null && marked.get(stream) !== stepNow) writeMark(stream);
      return write.apply(this, args);
    };
  }
}

/** User output still queued in this process (pipes may be written asynchronously). */
async function flushOutput() {
  for (const stream of [process.stdout, process.stderr]) {
    if (stream.writableLength > 0) await new Promise((resolve) => stream.once('drain', resolve));
  }
}

async function answer(id, text) {
  if (!pending.has(id)) return;
  await flushOutput();
  if (!pending.has(id)) return;
  pending.delete(id);
  send(text);
}

function fail(id, error, invalid = false) {
  return answer(id, JSON.stringify({ id, ok: false, error: describe(error, invalid) }));
}

function interruption() {
  return Object.assign(new Error('interrupted by the runner (time limit or cancellation); the call was abandoned'), { name: 'Interrupted' });
}

async function handle(request) {
  const { id, op } = request;
  if (op === 'abandon') {
    const running = execs.get(request.id);
    if (running) running.abandon(request.seen);
    else fail(request.id, interruption());
    return;
  }
  if (op === 'exec') {
    try {
      await new Exec(request).run();
    } catch (error) {
      // A broken exec must not leave the runner waiting for its lines.
      process.stderr.write(`runtime: exec failed: ${describe(error).traceback || describe(error).message}\n`);
      hardExit(70);
    }
    if (request.next) send(JSON.stringify(recycled(id, request.next, true)));
    return;
  }
  pending.set(id, true);
  if (op === 'load') {
    beginMarks(request.mark);
    try {
      const names = await load(request.file);
      await answer(id, JSON.stringify({ id, ok: true, functions: names }));
    } catch (error) {
      fail(id, error, error instanceof SyntaxError);
    }
  } else if (op === 'call') {
    const entry = functions.get(request.fn);
    if (!entry) return fail(id, new ReferenceError(`function ${request.fn} is not defined`));
    setStep(request.fn);
    let value;
    try {
      value = await entry.fn.apply(entry.self, request.args ?? []);
    } catch (error) {
      return fail(id, error);
    }
    try {
      await answer(id, `{"id":${id},"ok":true,"value":${strictJson(value, request.fn)}}`);
    } catch (error) {
      if (error instanceof NotSerialisable) {
        await answer(id, JSON.stringify({ id, ok: false, error: { type: 'NotSerialisable', message: error.message, traceback: '' } }));
      } else {
        fail(id, error);
      }
    }
  } else if (op === 'install') {
    beginMarks(request.mark);
    stepNow = 'install';
    await answer(id, JSON.stringify({ id, ...(await install(request.file, request.code, request.script)) }));
  } else if (op === 'reset') {
    forget(process.env.HOME || process.cwd());
    moveTo(request.dir);
    await answer(id, JSON.stringify({ id, ok: true }));
  } else if (op === 'recycle') {
    await answer(id, JSON.stringify(recycled(id, request.next)));
  } else {
    fail(id, new Error(`unknown op ${safeString(op)}`));
  }
}

const INSTALL_TAIL_BYTES = 2000;

/** A failed install step as a protocol error: `message` says how it ended, `traceback` is its stderr's tail. */
function installFailed(how, tail = '') {
  return { ok: false, error: { type: 'BashblockFailed', message: how, traceback: tail } };
}
/** The install step's shell, by absolute path (no lookup through PATH). */
const BASH = '/bin/bash';

/**
 * The run's code file, written by this process (the run's own uid, in its own directory: made
 * exclusively, never through a link), then the install step: `bash -c script` in that directory with
 * this process's environment, its stdout on the run's stdout, its stderr on the run's stderr (the
 * last bytes kept for the error). Whatever it started in its process group is killed after it.
 */
async function install(file, code, script) {
  const { constants, openSync, closeSync, writeSync } = require('node:fs');
  try {
    try {
      unlinkSync(file);
    } catch (error) {
      if (error.code !== 'ENOENT') throw error;
    }
    const fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    try {
      writeSync(fd, String(code));
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    return installFailed(`could not write the code file: ${error.message}`);
  }
  if (!script) return { ok: true };
  if (markToken !== null) for (const stream of [process.stdout, process.stderr]) writeMark(stream);
  await flushOutput();
  const { spawn } = require('node:child_process');
  return await new Promise((resolve) => {
    let tail = Buffer.alloc(0);
    let child;
    try {
      child = spawn(BASH, ['-c', String(script)], { cwd: path.dirname(file), stdio: ['ignore', 1, 'pipe'], detached: true });
    } catch (error) {
      resolve(installFailed(`could not start: ${error.message}`));
      return;
    }
    const stderrWrite = writes.get(process.stderr) ?? process.stderr.write;
    child.stderr.on('data', (chunk) => {
      stderrWrite.call(process.stderr, chunk);
      tail = Buffer.concat([tail, chunk]).subarray(-INSTALL_TAIL_BYTES);
    });
    child.once('error', (error) => resolve(installFailed(`could not start: ${error.message}`)));
    child.once('exit', (status, signal) => {
      // Its background jobs do not outlive it; one that left its group (setsid) and holds stderr
      // gets 100 ms to let go, not the run's time.
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // none left
      }
      const done = () => resolve(status === 0 ? { ok: true } : installFailed(signal ? `signal ${signal}` : `exit code ${status}`, tail.toString('utf8')));
      const timer = timers.setTimeout(() => {
        child.stderr.destroy();
        done();
      }, 100);
      child.stderr.once('close', () => {
        timers.clearTimeout(timer);
        done();
      });
    });
  });
}

/**
 * Drops the user functions and the CommonJS modules loaded from under `dir` (require's cache); the
 * warm module too unless `keepWarm` (an exec's own recycle: the module outlives its files).
 */
function forget(dir, keepWarm = false) {
  functions = new Map();
  if (!keepWarm) warm = null;
  for (const key of Object.keys(require.cache)) {
    if (key.startsWith(dir + path.sep)) delete require.cache[key];
  }
}

function moveTo(dir) {
  process.chdir(dir);
  process.env.HOME = dir;
  process.env.TMPDIR = dir;
}

/** Removes what user code left in the own dir, also read-only folders (this user owns them). */
function clearBase() {
  for (const entry of readdirSync(BASE, { withFileTypes: true })) {
    const target = path.join(BASE, entry.name);
    try {
      removeTree(target, entry.isDirectory());
    } catch {
      makeWritable(target);
      rmSync(target, { recursive: true, force: true });
    }
  }
}

/**
 * Depth first, one unlink or rmdir per entry: rmSync's recursive removal first tries rmdir on a
 * directory and builds an error (with its stack) when it is not empty, ~20% of a reuse run here.
 */
function removeTree(target, isDirectory) {
  if (!isDirectory) {
    unlinkSync(target);
    return;
  }
  for (const entry of readdirSync(target, { withFileTypes: true })) removeTree(path.join(target, entry.name), entry.isDirectory());
  rmdirSync(target);
}

/**
 * A fresh process's run is over: delete the files it left in the own dir, so that the runner's
 * removal (on its event loop) is one rmdir. Only a few plain files, so that the last line is not
 * delayed by much: anything more is left to the runner.
 */
function clearOwnFiles() {
  try {
    const entries = readdirSync(BASE, { withFileTypes: true });
    if (entries.length > 16 || entries.some((entry) => entry.isDirectory())) return;
    for (const entry of entries) unlinkSync(path.join(BASE, entry.name));
  } catch {
    // left to the runner
  }
}

function makeWritable(target) {
  if (!lstatSync(target).isDirectory()) return;
  chmodSync(target, 0o700);
  for (const entry of readdirSync(target)) makeWritable(path.join(target, entry));
}

/**
 * Reuse: forget the run, clear the own dir (every run's files) and move into `next`, a new
 * subdirectory. Every run gets a path of its own, so that require() (whose ES module cache cannot
 * be cleared) loads a new user_code.js, or a helper file of the same name, and not the last run's.
 * After an exec, the module it loaded stays warm (Exec.load).
 */
function recycled(id, next, keepWarm = false) {
  try {
    forget(BASE, keepWarm);
    if (!renamedEmptyRunDir(next)) {
      process.chdir(BASE);
      clearBase();
      mkdirSync(next, { mode: 0o700 });
    }
    moveTo(next);
    return { id, op: 'reset', ok: true };
  } catch (error) {
    return { id, op: 'reset', ok: false, error: describe(error).message };
  }
}

/**
 * The common case of a reuse run that left no file: its run directory, still empty and as it was
 * made (mode 0700, the only entry of the own dir), becomes `next` by one rename instead of a removal
 * and a creation (~10 against ~75 us of ext4 work here, a quarter of a warm reuse run in the child).
 * A new path all the same, which is what require()'s caches need. Whether it applied.
 */
function renamedEmptyRunDir(next) {
  const current = process.cwd();
  if (path.dirname(current) !== BASE) return false;
  const own = readdirSync(BASE);
  if (own.length !== 1 || own[0] !== path.basename(current) || readdirSync(current).length !== 0) return false;
  const stat = lstatSync(current);
  if (!stat.isDirectory() || (stat.mode & 0o7777) !== 0o700) return false;
  renameSync(current, next);
  return true;
}

/** Execs in progress by id (abandon gives up their current step). */
const execs = new Map();
/** Ends the exec step running user code: errors thrown outside the awaited call fail it. */
let failActiveStep = null;

/** What the runner reads as running (pollCompletion.ts): an object whose status is running. */
function isRunning(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value) && typeof value.status === 'string' && value.status.toLowerCase() === 'running';
}

class Interrupted extends Error {}

/**
 * One `exec` request: the whole run, one protocol line per step (see runtime.py's docstring and its
 * Exec for what an abandon means before and during finish).
 */
class Exec {
  constructor(request) {
    this.id = request.id;
    this.request = request;
    this.args = request.args ?? [];
    this.operator = request.plan !== 'action';
    this.names = [];
    this.hasFinish = false;
    this.interrupted = false;
    this.sent = 0;
    this.finishing = false;
    /** Ends the current step (user call or wait) early: abandon or a stray error. */
    this.abort = null;
  }

  /** The runner's abandon, sent when it had read `seen` of this exec's lines. */
  abandon(seen) {
    // Sent before the runner read the line announcing finish: it crossed that line, finish stays.
    if (this.finishing && typeof seen === 'number' && seen < this.sent) return;
    this.interrupted = true;
    this.abort?.(new Interrupted());
  }

  /**
   * Runs `work` as the current step: an abandon ends the wait for it, and so does an error thrown
   * outside the awaited user code (a timer, a stray promise) while it runs user code.
   */
  step(work, userCode = true) {
    if (this.interrupted) return Promise.reject(new Interrupted());
    let ends = null;
    return new Promise((resolve, reject) => {
      ends = reject;
      this.abort = reject;
      if (userCode) failActiveStep = reject;
      try {
        Promise.resolve(work()).then(resolve, reject);
      } catch (error) {
        reject(error);
      }
    }).finally(() => {
      this.abort = null;
      if (failActiveStep === ends) failActiveStep = null;
    });
  }

  /** A user call: { ok, value } or { ok: false, error }; throws Interrupted when the runner gave it up. */
  async call(name) {
    const entry = functions.get(name);
    setStep(name);
    let value;
    try {
      value = await this.step(() => entry.fn.apply(entry.self, this.args));
    } catch (error) {
      if (this.interrupted) throw new Interrupted();
      return { ok: false, error: describe(error) };
    }
    if (this.interrupted) throw new Interrupted();
    return { ok: true, value };
  }

  /** What follows the line being sent: more steps (null), finish, or nothing. */
  after(more) {
    if (more) return null;
    return this.hasFinish ? 'finish' : 'done';
  }

  /** Sends one line (JSON text of an object); `after` ("finish", "done" or null) is marked on it. */
  async line(text, after) {
    const marked = after === null ? text : text.slice(0, -1) + (after === 'finish' ? ',"next":"finish"}' : ',"done":true}');
    this.sent += 1;
    if (after === 'finish') {
      // From here an abandon aims at finish: earlier ones are moot, the runner reads this line and
      // then waits for finish.
      this.finishing = true;
      this.interrupted = false;
    }
    await flushOutput();
    if (after === 'done' && this.request.clear) clearOwnFiles();
    send(marked);
  }

  /** Sends one call's step line; whether the call succeeded (its value encoded as JSON). */
  async result(name, outcome, moreIfOk = false) {
    let { ok, error } = outcome;
    let encoded;
    if (ok) {
      try {
        encoded = strictJson(outcome.value, name);
      } catch (failure) {
        ok = false;
        error = failure instanceof NotSerialisable ? { type: 'NotSerialisable', message: failure.message, traceback: '' } : describe(failure);
      }
    }
    if (ok) await this.line(`{"id":${this.id},"fn":"${name}","ok":true,"value":${encoded}}`, this.after(moreIfOk));
    else await this.line(JSON.stringify({ id: this.id, fn: name, ok: false, error }), this.after(false));
    return ok;
  }

  async run() {
    execs.set(this.id, this);
    beginMarks(this.request.mark);
    let at = 'load';
    try {
      if (!(await this.load())) return;
      if (!this.operator) {
        at = 'run';
        await this.result('run', await this.call('run'));
        return;
      }
      if (this.names.includes('initialize')) {
        at = 'initialize';
        if (!(await this.result('initialize', await this.call('initialize'), true))) return await this.finish();
      }
      at = 'run';
      const polls = this.names.includes('check_completion');
      if (!(await this.result('run', await this.call('run'), polls)) || !polls) return await this.finish();
      const pollMs = Math.max(0, this.request.pollIntervalMs ?? 0);
      const completionDeadline = Date.now() + Math.max(0, this.request.checkCompletionTimeoutMs ?? 0);
      for (;;) {
        at = 'check_completion';
        const checked = await this.call('check_completion');
        const running = checked.ok && isRunning(checked.value);
        if (!(await this.result('check_completion', checked, running)) || !running) return await this.finish();
        const now = Date.now();
        if (now < completionDeadline) {
          at = 'sleep';
          const wait = Math.min(pollMs, completionDeadline - now);
          await this.step(() => new Promise((resolve) => timers.setTimeout(resolve, wait)), false);
          if (this.interrupted) throw new Interrupted();
        }
        if (Date.now() >= completionDeadline) {
          // The runner gives up before its next poll (or interrupts that poll at once).
          await this.line(`{"id":${this.id},"completion":"timeout"}`, this.after(false));
          return await this.finish();
        }
      }
    } catch (error) {
      if (!(error instanceof Interrupted)) throw error;
      // Where the abandon found the run; what was in flight is the runner's to say.
      const loaded = at !== 'load';
      if (!loaded) this.hasFinish = false;
      await this.line(JSON.stringify({ id: this.id, interrupted: at }), this.after(false));
      if (loaded) await this.finish();
    } finally {
      execs.delete(this.id);
      // Output after the run (timers it left) is nobody's run: no marks.
      beginMarks(null);
    }
  }

  /**
   * Writes the code (when sent) and loads it; whether the run goes on (a run function exists).
   * Reuse (`next`: this process serves another run after this one): when the code is the very text
   * the last exec loaded, that module is used again, neither written nor evaluated again, so its
   * module-level state carries over like a warm serverless function's. Writing and loading a new
   * module cost ~0.5 ms of CPU per run (an ES module's compile through require(), ~0.3 ms for
   * CommonJS), a quarter of what a whole task may cost at the throughput target. An install step
   * (the runner wrote the file: no `code`) always loads afresh.
   */
  async load() {
    const { file, code } = this.request;
    const keep = typeof code === 'string' && typeof this.request.next === 'string';
    let names;
    if (keep && warm !== null && warm.code === code) {
      functions = warm.functions;
      names = [...functions.keys()];
    } else {
      warm = null;
      try {
        names = await this.step(() => {
          if (typeof code === 'string') writeFileSync(file, code, { mode: 0o600 });
          return load(file);
        });
      } catch (error) {
        if (this.interrupted) throw new Interrupted();
        await this.line(JSON.stringify({ id: this.id, fn: 'load', ok: false, error: describe(error, error instanceof SyntaxError) }), 'done');
        return false;
      }
      if (keep) warm = { code, functions };
    }
    if (this.interrupted) throw new Interrupted();
    this.names = names;
    this.hasFinish = this.operator && names.includes('finish');
    // No run function: the runner fails the run without calling anything (finish included).
    await this.line(JSON.stringify({ id: this.id, fn: 'load', ok: true, functions: names }), names.includes('run') ? null : 'done');
    return names.includes('run');
  }

  /** finish, whatever happened before (the runner's abandon included): the last step of an exec. */
  async finish() {
    if (!this.hasFinish) return;
    this.hasFinish = false; // its own line is the last one
    try {
      await this.result('finish', await this.call('finish'));
    } catch (error) {
      if (!(error instanceof Interrupted)) throw error;
      await this.line(JSON.stringify({ id: this.id, interrupted: 'finish' }), 'done');
    }
  }
}

/** Errors thrown outside the awaited call (timers, stray promises) fail whatever call is in flight. */
function stray(error) {
  if (failActiveStep) {
    failActiveStep(error);
    return;
  }
  if (pending.size === 0) {
    process.stderr.write(`uncaught error outside a call: ${describe(error).message}\n`);
    return;
  }
  for (const id of [...pending.keys()]) fail(id, error);
}

function onLine(line) {
  let request;
  try {
    request = JSON.parse(line);
  } catch {
    process.stderr.write('runtime: unreadable protocol line\n');
    return;
  }
  void handle(request);
}

// The ES module loader's own modules (what require() of the first ES module loads) are compiled
// now, with the code cache: a user ES module then costs ~0.6 ms instead of ~3.7 ms; CommonJS user
// code pays ~1.5 ms for it.
try {
  require('./esmWarm.mjs');
} catch {
  // a node without require(esm): user ES modules go through import() anyway
}

setV8Flags?.(heapFlag);

/**
 * Makes this process a runtime process and serves the protocol on fd 3 until the runner is gone.
 * Everything above only defines and loads, so that the node fork server (forkserver.cjs) can load
 * this module once and call main() in each forked child; started as a script, it calls main() itself.
 * options.exit: how the process ends itself (a forked child must not run node's exit path). The
 * memory limit is the first argument (a forked child's argv reads as a spawned one's).
 */
function main(options = {}) {
  MEMORY_MB = Number(process.argv[2] ?? 0);
  if (options.exit) hardExit = options.exit;
  process.exit = (code) => {
    throw new ExitAttempt(`process.exit(${code ?? ''})`);
  };
  process.reallyExit = (code) => {
    throw new ExitAttempt(`process.reallyExit(${code ?? ''})`);
  };
  process.abort = () => {
    throw new ExitAttempt('process.abort()');
  };

  // Blocking stdout/stderr: a flood of console.log is paced by the parent (which caps it) instead of
  // queueing in this process, and nothing written before an answer is lost when the process is killed.
  for (const stream of [process.stdout, process.stderr]) stream._handle?.setBlocking?.(true);
  markStreams();

  BASE = process.cwd();
  channel = new net.Socket({ fd: 3, readable: true, writable: true });
  // The channel only closes when the parent is gone (it kills us otherwise): remove the own dir, exit.
  const parentGone = () => {
    if (path.basename(BASE).startsWith('coderun-')) rmSync(BASE, { recursive: true, force: true });
    hardExit(0);
  };
  channel.on('error', parentGone);
  channel.on('close', parentGone);

  process.on('uncaughtException', stray);
  process.on('unhandledRejection', stray);

  // JSON lines (node:readline would be one more module to load at every start). Only the chunk that
  // arrived is searched for the end of a line, so a large message costs linear time.
  channel.setEncoding('utf8');
  let partial = [];
  channel.on('data', (chunk) => {
    let start = 0;
    let end = chunk.indexOf('\n');
    while (end !== -1) {
      partial.push(chunk.slice(start, end));
      const line = partial.join('');
      partial = [];
      onLine(line);
      start = end + 1;
      end = chunk.indexOf('\n', start);
    }
    if (start < chunk.length) partial.push(chunk.slice(start));
  });

  send(JSON.stringify({ op: 'ready', pid: process.pid }));
}

/**
 * Spawned by the runner itself (not forked): dies with it (SIGKILL as parent-death signal, through the
 * nodefork addon when it is built), so that a busy loop of user code cannot keep it alive once the
 * runner is gone; without the addon only the end of the protocol channel ends it (when its event
 * loop gets to run). Forked and exec'd runtimes got theirs from their fork server.
 */
function dieWithRunner() {
  const parent = Number(process.env.CODERUN_PARENT_PID ?? 0);
  delete process.env.CODERUN_PARENT_PID;
  if (!(parent > 0)) return;
  try {
    require('../native/build/Release/nodefork.node').dieWithParent(parent, false);
  } catch {
    // no addon
  }
}

if (require.main === module) {
  dieWithRunner();
  main();
}
else module.exports = { main };
