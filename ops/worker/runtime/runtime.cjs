'use strict';
// JavaScript runtime shim for the sandboxed code runner (ops/worker/ProcessCodeRunner.ts).
//
// Protocol: JSON lines on fd 3 (a socket pair made by the parent), both directions; the same
// messages as runtime.py, plus {"op": "abandon", "id": n}: answer call n now with an
// `Interrupted` error (a pending promise cannot be stopped; its late result is dropped).
// fd 0 is /dev/null; fd 1 and 2 belong to the user code and are captured, capped, by the parent.
//
// Module form: the code is saved as `user_code.js` (no package.json) and loaded with require().
// Node's syntax detection (20.19+) makes it an ES module when it uses import/export, CommonJS
// otherwise; require() of an ES module (20.19+) runs it synchronously unless it uses top-level
// await, which is then loaded with import() instead. Functions come from named exports
// (`export function run(connection, payload, context)`, `exports.run = ...`) or from the default
// export / `module.exports` object. They may be async.
//
// Start-up cost (every JavaScript run starts a fresh node; node cannot fork; measure it with
// ops/worker/runtimeStartBench.run.ts): this file is CommonJS because an ES module entry point
// makes node set up its whole ES module loader before the first line runs (~6 ms of CPU, ~16 ms
// with the heap flag below), and so does a first import() of user code, where require() of the
// same module costs ~0.6 ms; it loads no built-in module it can do without (no readline); and it
// loads its built-ins while V8's flags are the defaults (below).
// Usage: node --max-old-space-size=<memoryMb> runtime.cjs <memoryMb>

// Node ships a V8 code cache for its built-in modules, which V8 rejects when any V8 flag differs
// from its default (the cache carries a hash of the flags): with --max-old-space-size every built-in
// loaded after bootstrap is compiled from source (net: ~9 ms of CPU instead of ~2.5). The heap
// limit was fixed when the isolate was created, before this line; V8 only reads the flag again
// when it creates another isolate (worker_threads). So the flag goes back to its default while
// the shim loads its own modules, and is put back before any user code runs: user code, and any
// worker it starts, sees exactly the flags the process was started with.
const heapFlag = process.execArgv.findLast((arg) => /^--max[-_]old[-_]space[-_]size=\d+$/.test(arg));
const setV8Flags = heapFlag ? v8FlagSetter() : null;
setV8Flags?.('--max-old-space-size=0');

const { rmSync } = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { pathToFileURL } = require('node:url');

const MEMORY_MB = Number(process.argv[2] ?? 0);
const NAMES = ['initialize', 'run', 'check_completion', 'finish'];
const TRACEBACK_LIMIT = 8192;

/**
 * V8's setFlagsFromString without loading `node:v8` (itself ~7 ms of uncached compilation); null
 * when this node has no such binding (the shim then starts as before, only slower).
 */
function v8FlagSetter() {
  // process.binding('v8') emits a DeprecationWarning (on stderr, i.e. into the user's log) unless
  // deprecations are silenced; emitWarning checks noDeprecation synchronously.
  const quiet = process.noDeprecation;
  process.noDeprecation = true;
  try {
    const binding = process.binding('v8');
    return typeof binding.setFlagsFromString === 'function' ? binding.setFlagsFromString : null;
  } catch {
    return null;
  } finally {
    if (quiet === undefined) delete process.noDeprecation;
    else process.noDeprecation = quiet;
  }
}

class ExitAttempt extends Error {
  constructor(how) {
    super(`operator code called ${how}: ending the runtime process is not allowed`);
    this.name = 'ExitAttempt';
  }
}

const hardExit = typeof process.reallyExit === 'function' ? process.reallyExit.bind(process) : process.exit.bind(process);
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

const channel = new net.Socket({ fd: 3, readable: true, writable: true });
// The channel only closes when the parent is gone (it kills us otherwise): remove the run dir, exit.
const parentGone = () => {
  const dir = process.cwd();
  if (path.basename(dir).startsWith('coderun-')) rmSync(dir, { recursive: true, force: true });
  hardExit(0);
};
channel.on('error', parentGone);
channel.on('close', parentGone);

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

async function handle(request) {
  const { id, op } = request;
  if (op === 'abandon') {
    fail(request.id, Object.assign(new Error('interrupted by the runner (time limit or cancellation); the call was abandoned'), { name: 'Interrupted' }));
    return;
  }
  pending.set(id, true);
  if (op === 'load') {
    try {
      const names = await load(request.file);
      await answer(id, JSON.stringify({ id, ok: true, functions: names }));
    } catch (error) {
      fail(id, error, error instanceof SyntaxError);
    }
  } else if (op === 'call') {
    const entry = functions.get(request.fn);
    if (!entry) return fail(id, new ReferenceError(`function ${request.fn} is not defined`));
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
  } else if (op === 'reset') {
    functions = new Map();
    process.chdir(request.dir);
    process.env.HOME = request.dir;
    process.env.TMPDIR = request.dir;
    await answer(id, JSON.stringify({ id, ok: true }));
  } else {
    fail(id, new Error(`unknown op ${safeString(op)}`));
  }
}

/** Errors thrown outside the awaited call (timers, stray promises) fail whatever call is in flight. */
function stray(error) {
  if (pending.size === 0) {
    process.stderr.write(`uncaught error outside a call: ${describe(error).message}\n`);
    return;
  }
  for (const id of [...pending.keys()]) fail(id, error);
}
process.on('uncaughtException', stray);
process.on('unhandledRejection', stray);

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

// The ES module loader's own modules (what require() of the first ES module loads) are compiled
// now, with the code cache: a user ES module then costs ~0.6 ms instead of ~3.7 ms; CommonJS user
// code pays ~1.5 ms for it.
try {
  require('./esmWarm.mjs');
} catch {
  // a node without require(esm): user ES modules go through import() anyway
}

setV8Flags?.(heapFlag);
send(JSON.stringify({ op: 'ready', pid: process.pid }));
