import { spawn } from 'node:child_process';
import { chown, lchown, readdir, rm, writeFile } from 'node:fs/promises';
import { chownSync, existsSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type {
  ActionOutcome,
  ActionRunRequest,
  CodeBlock,
  CodeRunner,
  Language,
  OperatorOutcome,
  OperatorRunRequest,
  RunLimits,
} from '../../shared/ports/CodeRunner.ts';
import { CappedLog, TailBuffer } from './boundedOutput.ts';
import { failedStart, ForkServer } from './ForkServer.ts';
import { NODE_FORK_ADDON, nodeForkAddonLoads, nodeForkProgram } from './nodeForkProgram.ts';
import { SpawnedProcess, type ProcessEvents, type ProcessHandle } from './processHandle.ts';
import {
  ProcessDied,
  RuntimeProcess,
  RUNTIME_DIR,
  runtimeArgs,
  type ExecEvent,
  type ExecEvents,
  type ExecRequest,
  type ExecStep,
  type WireError,
  type WireRequest,
} from './RuntimeProcess.ts';
import {
  bwrapArgs,
  killGroup,
  makeRunDir,
  pythonFor,
  resolvePython,
  runDirName,
  RunIdentities,
  scrubbedEnv,
  type BwrapLayout,
  type RunAs,
  type RunAsRange,
} from './sandbox.ts';
import { WarmPool } from './WarmPool.ts';

export interface ProcessCodeRunnerOptions {
  /** Warm processes per (language, memoryMb), started ahead of demand. Default 2; 0 = on demand. */
  poolSize?: number;
  /** Distinct (language, memoryMb) pools kept warm. Default 4. */
  maxPoolKeys?: number;
  /** Pools to start now rather than at their first run. */
  prewarm?: Array<{ language: Language; memoryMb: number }>;
  /** Real python3 executable; default: resolved once from `python3` on PATH. */
  pythonPath?: string | null;
  /** node executable; default: the current one. */
  nodePath?: string;
  /** Budget of the finish hook, on top of the run's time limit. Default 5000 ms. */
  finishTimeoutMs?: number;
  /** After a time limit or cancellation, how long an interrupted call may take to unwind before SIGKILL. Default 1000 ms. */
  interruptGraceMs?: number;
  /** RSS growth allowed beyond memoryMb before the watchdog kills (runtime overhead). Default 64 MB. */
  memoryHeadroomMb?: number;
  /** Parent of the per-run working directories. Default: the OS temp dir. */
  tmpRoot?: string;
  /**
   * Runs served by one process in reuse mode before it is replaced. Default 10,000 (a new process
   * costs more than its fork: its first hundreds of runs are slower, see docs/decisions.md).
   */
  maxRunsPerProcess?: number;
  /** Idle reuse processes kept per (language, memoryMb): the reuse runs expected at once. Default max(poolSize, 1). */
  maxIdleReusable?: number;
  /**
   * Run user code (and bashblocks) as this unprivileged user, or (with `count` > 1) as one of
   * `count` consecutive uid/gid pairs, a distinct one per live process. Without it, user code has
   * the service's uid: the scrubbed environment hides the secrets from its env, but same-uid code
   * can still read /proc/<service pid>/environ and the service's files. Needs a service able to
   * setuid. The service passes its default range when it runs as root (sandbox.ts, decideSandbox).
   */
  runAs?: RunAs | RunAsRange;
  /** Every run fails with this message (code runs refused: no sandbox on this host, decideSandbox). */
  disabled?: string;
  /**
   * Not root: the fork servers (and every install step) run inside bubblewrap sandboxes (sandbox.ts,
   * bwrapArgs) in which `hidden` (DATA_DIR) and the service's code tree are empty, the runs'
   * directories live in a private root of their own, and processes are only ever forked (a process
   * the service would spawn or exec itself could not be wrapped with its pid known: refused).
   * Exclusive with runAs.
   */
  bwrap?: { hidden: ReadonlyArray<string> };
  /**
   * Python processes are forked from a pre-initialised interpreter (ForkServer.ts: ~1-2 ms instead
   * of ~47 ms of CPU per process; still one fresh process per run), and node runtimes are exec'd in
   * children of it, so the service never forks its own (large) address space on its event loop.
   * Default true (when python3 exists); false spawns both interpreters from the service.
   */
  pythonForkServer?: boolean;
  /**
   * JavaScript processes are forked from a node fork server (runtime/forkserver.cjs, one per memory
   * limit, at most maxPoolKeys of them) instead of starting node: ~7-8 ms instead of ~30 ms of CPU
   * per process, still one fresh process per run. Default true when the nodefork addon is built
   * (ops/worker/native); false, or without the addon, node is exec'd (see pythonForkServer).
   */
  nodeForkServer?: boolean;
  /**
   * How a run reaches its process. 'exec' (default): one request for the whole run (write the code,
   * load, initialize, run, check_completion polling, finish), one line back per step. 'steps': one
   * request per step (load, each call), the runner polling; the same outcomes, more round trips.
   */
  protocol?: 'exec' | 'steps';
}

type Output = Record<string, unknown>;
type WithoutLog<T> = T extends unknown ? Omit<T, 'logs' | 'logsTruncated'> : never;
type OperatorResult = WithoutLog<OperatorOutcome>;
type ActionResult = WithoutLog<ActionOutcome>;

/** What stopped a run before its code was ready to call. */
type Failure =
  | { kind: 'invalid'; message: string }
  | { kind: 'error'; message: string; traceback?: string }
  | { kind: 'timeout'; message: string }
  | { kind: 'cancelled' };

type CallResult =
  | { kind: 'ok'; value: unknown; functions?: string[] }
  | { kind: 'error'; error: WireError }
  | { kind: 'timeout' }
  | { kind: 'cancelled' }
  | { kind: 'died'; died: ProcessDied };

/** The run's process is ready and its code file is known (`written`: already on disk). */
interface Started {
  file: string;
  written: boolean;
}

/**
 * How the calls of one run reach its process. The run's logic (what is called when, what the
 * outcome is) is written once, in runOperator/poll, on top of this: StepDriver makes one request
 * per step and polls from here; ExecDriver sends the whole run as one request and reads one line
 * per step, the process polling by itself. Both give the same outcomes.
 */
interface Driver {
  /** The code loaded: the functions it defines (ok), or why it did not load. */
  load(): Promise<CallResult>;
  /** One user call, given up at `deadline` or cancellation (then interrupted, killed if it does not stop). */
  call(fn: string, deadline: number): Promise<CallResult>;
  /** After check_completion answered running: 'poll' for the next poll, or why polling ends. */
  pause(completionDeadline: number): Promise<'poll' | 'completion' | 'deadline' | 'cancelled'>;
  /** finish in the run's own process (still alive), within `deadline`. */
  finish(deadline: number): Promise<CallResult>;
}

/** The service's code tree (hidden in the bubblewrap sandbox but for RUNTIME_DIR and ADDON_DIR). */
const SERVICE_ROOT = dirname(fileURLToPath(new URL('../../package.json', import.meta.url)));
const ADDON_DIR = dirname(NODE_FORK_ADDON);

/**
 * The service user's home directory, hidden in the bubblewrap sandbox too (the runs have its uid:
 * its dotfiles, credentials, shell history), unless an interpreter lives under it (pyenv, nvm),
 * which the fork servers must start from; nothing when HOME is unset or /.
 */
function serviceHome(executables: ReadonlyArray<string | null>): string[] {
  const home = process.env.HOME;
  if (!home || home === '/' || !home.startsWith('/')) return [];
  const base = home.endsWith('/') ? home : `${home}/`;
  return executables.some((executable) => executable !== null && executable.startsWith(base)) ? [] : [home.replace(/\/+$/, '')];
}

function existingRealPaths(paths: ReadonlyArray<string>): string[] {
  const found: string[] = [];
  for (const path of paths) {
    try {
      found.push(realpathSync(path));
    } catch {
      // does not exist: nothing to hide
    }
  }
  return [...new Set(found)];
}

const LANGUAGES: readonly Language[] = ['python', 'javascript'];
const CODE_FILE: Record<Language, string> = { python: 'user_code.py', javascript: 'user_code.js' };
const RESET_TIMEOUT_MS = 2000;
const INSTALL_TAIL_BYTES = 2000;

/**
 * CodeRunner on separate OS processes (never node:vm): one python3 / node process per run (forked
 * from a Python or a node fork server, else spawned), taken from a warm pool, in a private temp
 * directory with a scrubbed environment, a hard time limit
 * (SIGKILL to the process group), a memory limit and capped output. See docs/decisions.md
 * ("Code runner") for the protocol, the module forms and the reuse trade-off.
 */
export class ProcessCodeRunner implements CodeRunner {
  private readonly pool: WarmPool;
  private readonly executables: Record<Language, string | null>;
  private readonly finishTimeoutMs: number;
  private readonly interruptGraceMs: number;
  private readonly tmpRoot: string;
  private readonly runAs: RunAs | undefined;
  /** Identities handed to processes, one per live process (null: the service's own). */
  private readonly identities: RunIdentities | null;
  /** Why runs of a language cannot happen here, beyond a missing interpreter. */
  private readonly problems: Partial<Record<Language, string>> = {};
  private readonly disabled: string | undefined;
  /** The bubblewrap sandbox of every fork server and install step (undefined: none). */
  private readonly bwrap: BwrapLayout | undefined;
  private readonly headroomMb: number;
  private readonly forkServer: ForkServer | null;
  /** Node fork servers by memory limit; null when JavaScript processes are not forked. */
  private readonly nodeForkServers: Map<number, ForkServer> | null;
  private readonly maxNodeForkServers: number;
  private readonly oneShot: boolean;
  private closed = false;

  constructor(options: ProcessCodeRunnerOptions = {}) {
    this.executables = {
      python: options.pythonPath === undefined ? resolvePython() : options.pythonPath,
      javascript: options.nodePath ?? process.execPath,
    };
    this.finishTimeoutMs = options.finishTimeoutMs ?? 5000;
    this.interruptGraceMs = options.interruptGraceMs ?? 1000;
    const sandbox = options.bwrap && !options.runAs ? options.bwrap : undefined;
    // Sandboxed runs have the service's uid: their directories sit in a private root, the only one of
    // the host's temp directory the sandboxes show (writable).
    this.tmpRoot = sandbox ? realpathSync(mkdtempSync(join(options.tmpRoot ?? tmpdir(), 'coderuns-'))) : (options.tmpRoot ?? tmpdir());
    this.bwrap = sandbox
      ? {
          // Real paths (a symlinked DATA_DIR is hidden where it is), existing ones only (bubblewrap
          // cannot make a mount point for HOME=/nonexistent in the read-only /).
          hidden: existingRealPaths([...sandbox.hidden, SERVICE_ROOT, ...serviceHome([this.executables.python, this.executables.javascript])]),
          // What the fork servers load from the hidden code tree: the runtimes and the addon.
          readOnly: [RUNTIME_DIR, ADDON_DIR],
          writable: [this.tmpRoot],
        }
      : undefined;
    this.runAs = options.runAs ? { uid: options.runAs.uid, gid: options.runAs.gid } : undefined;
    this.identities = options.runAs ? new RunIdentities({ count: 1, ...options.runAs }) : null;
    this.disabled = options.disabled;
    this.oneShot = options.protocol !== 'steps';
    const headroom = options.memoryHeadroomMb ?? 64;
    this.headroomMb = headroom;
    if (this.runAs && this.executables.python) {
      // The run user must be able to read the interpreter's standard library (a pyenv one under a
      // 0700 /root cannot: lazy imports would fail after the privilege drop): else the system one.
      const usable = pythonFor([this.executables.python, '/usr/bin/python3'], this.runAs);
      if (!usable) {
        this.problems.python = `no python3 that the run user (uid ${this.runAs.uid}) can use: ${this.executables.python} and /usr/bin/python3 are not readable or do not start as that user`;
      }
      this.executables.python = usable;
    }
    const python = this.executables.python;
    this.forkServer =
      python && options.pythonForkServer !== false
        ? new ForkServer({ executable: python, ...(this.runAs ? { runAs: this.runAs } : {}), ...(this.bwrap ? { bwrap: this.bwrap } : {}) })
        : null;
    const maxKeys = options.maxPoolKeys ?? 4;
    this.nodeForkServers = options.nodeForkServer !== false && nodeForkAddonLoads() ? new Map() : null;
    if (this.bwrap) {
      if (!this.forkServer) this.problems.python = 'Python runs need the Python fork server in the bubblewrap sandbox (it is turned off or python3 is missing)';
      if (!this.nodeForkServers) this.problems.javascript = 'JavaScript runs need the node fork server in the bubblewrap sandbox (it is turned off or the nodefork addon is not built)';
    }
    // One per memory limit in use, and the pool keeps at most maxKeys (language, limit) pools.
    this.maxNodeForkServers = maxKeys;
    this.pool = new WarmPool({
      size: options.poolSize ?? 2,
      maxKeys,
      maxRunsPerProcess: options.maxRunsPerProcess ?? 10_000,
      maxIdleReusable: options.maxIdleReusable ?? Math.max(options.poolSize ?? 2, 1),
      makeDir: (language, memoryMb) => (this.forkedBy(language, memoryMb) ? runDirName(this.tmpRoot) : makeRunDir(this.tmpRoot)),
      // The same answer as makeDir's, just before it in the same turn (launch runs in the constructor).
      start: (language, memoryMb, dir) => this.startProcess(language, memoryMb, dir, this.forkedBy(language, memoryMb)),
      reset: (proc) => this.reset(proc),
    });
    // Refused runs (no sandbox) need no warm process.
    for (const { language, memoryMb } of this.disabled ? [] : (options.prewarm ?? [])) {
      if (this.executables[language]) this.pool.prewarm(language, memoryMb);
    }
  }

  /** Processes currently held: warm fresh ones, idle reusable ones, and all (including busy). */
  poolSize(): { fresh: number; used: number; total: number } {
    return this.pool.size;
  }

  /** Starts the warm pool of (language, memoryMb) and resolves when it is ready to serve runs. */
  async warmUp(language: Language, memoryMb: number): Promise<void> {
    if (this.executables[language]) await this.pool.warm(language, memoryMb);
  }

  /** Process ids of the runtime processes currently alive (pooled and busy); for diagnostics and tests. */
  processIds(): number[] {
    return this.pool.pids();
  }

  /** Process id of the Python fork server, when one runs; for diagnostics and tests. */
  forkServerPids(): number[] {
    return this.forkServer?.pids() ?? [];
  }

  /** Process ids of the node fork servers that run; for diagnostics and tests. */
  nodeForkServerPids(): number[] {
    return [...(this.nodeForkServers?.values() ?? [])].flatMap((server) => server.pids());
  }

  /**
   * Resolves when the cleanup of the runs that returned so far is done (process gone, directory
   * removed, reuse process reset). Outcomes are returned before that cleanup finishes.
   */
  async cleanedUp(): Promise<void> {
    await this.pool.settled();
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.pool.close();
    await Promise.all([this.forkServer?.close(), ...[...(this.nodeForkServers?.values() ?? [])].map((server) => server.close())]);
    if (this.bwrap) await rm(this.tmpRoot, { recursive: true, force: true }).catch(() => {});
  }

  /** One runtime process in `dir`, started through `server` (null: spawned), with an identity of its own. */
  private startProcess(language: Language, memoryMb: number, dir: string, server: ForkServer | null): RuntimeProcess {
    const runAs = this.identities?.take();
    if (runAs && server === null) chownSync(dir, runAs.uid, runAs.gid);
    const proc = new RuntimeProcess({
      language,
      memoryMb,
      dir,
      memoryHeadroomMb: this.headroomMb,
      makesOwnDir: server !== null,
      ...(runAs ? { runAs } : {}),
      launch: (events) => this.launch(language, memoryMb, dir, server, runAs, events),
    });
    // Back to the free identities once the process (and, through its cgroup, all it started) is gone.
    if (runAs) void proc.exited.then(() => this.identities?.release(runAs));
    return proc;
  }

  /**
   * JavaScript that uses worker threads runs in a node exec'd for it (by the Python fork server),
   * never in a forked one: a forked node has none of the fork server's platform threads, and a
   * worker's exit, which drains the tasks posted to them, sometimes never came (most runs on a
   * loaded machine; docs/decisions.md, "JavaScript fork server"). Decided on the code's text: code
   * that reaches worker_threads without naming it keeps the forked node and that risk. Not in the
   * bubblewrap sandbox, where an exec'd node is refused.
   */
  private needsExecNode(codeblock: { language: Language; code: string }): boolean {
    return codeblock.language === 'javascript' && this.nodeForkServers !== null && this.forkServer !== null && !this.bwrap && codeblock.code.includes('worker_threads');
  }

  /** The run's process: one of its own (never pooled or reused) for code that needs an exec'd node, else the pool's. */
  private async takeFor(codeblock: { language: Language; code: string }, memoryMb: number, reuse: boolean): Promise<{ proc: RuntimeProcess; reuse: boolean }> {
    if (!this.needsExecNode(codeblock)) return { proc: await this.pool.take(codeblock.language, memoryMb, reuse), reuse };
    return { proc: this.pool.takeOwn(() => this.startProcess('javascript', memoryMb, runDirName(this.tmpRoot), this.forkServer)), reuse: false };
  }

  /**
   * The fork server that starts processes of (language, memoryMb), or null when they are spawned:
   * Python through the Python fork server; JavaScript through the node fork server of its memory
   * limit (made at the first need, up to maxNodeForkServers limits; not once it is broken), else
   * exec'd by the Python one.
   */
  private forkedBy(language: Language, memoryMb: number): ForkServer | null {
    if (language === 'python' || !this.nodeForkServers || this.closed) return this.forkServer;
    let server = this.nodeForkServers.get(memoryMb);
    if (server?.broken) return this.forkServer;
    if (!server && this.nodeForkServers.size < this.maxNodeForkServers) {
      const program = nodeForkProgram(memoryMb);
      if (program) {
        server = new ForkServer({
          executable: this.executables.javascript ?? process.execPath,
          program,
          ...(this.runAs ? { runAs: this.runAs } : {}),
          ...(this.bwrap ? { bwrap: this.bwrap } : {}),
        });
        this.nodeForkServers.set(memoryMb, server);
      }
    }
    return server ?? this.forkServer;
  }

  /**
   * Starts one runtime process through a fork server when there is one (Python: forked from the
   * Python one; node: forked from the node one of its memory limit, or exec'd in a child forked from
   * the Python one, so that the service's own fork() with its large heap stays off the event loop),
   * otherwise spawned.
   */
  private launch(language: Language, memoryMb: number, dir: string, server: ForkServer | null, runAs: RunAs | undefined, events: ProcessEvents): ProcessHandle {
    const executable = this.executables[language] ?? 'python3';
    const execNode = language === 'javascript' && server !== null && server === this.forkServer;
    if (this.bwrap && (server === null || execNode)) {
      // A spawned runtime's pid would be bubblewrap's (no interrupt, no watchdog), and an exec'd node
      // is dumpable until its own code runs (another run of the same sandbox could attach first).
      return failedStart(events, `${language} runs need their fork server in the bubblewrap sandbox, and it is not available (broken, or too many memory limits at once)`);
    }
    if (server) {
      return server.fork(
        {
          dir,
          memoryMb,
          // The whole tree's limit (where the fork server can make cgroups): the watchdog's for the process itself.
          treeMb: memoryMb + this.headroomMb,
          ...(runAs ? { runAs } : {}),
          ...(execNode ? { exec: { executable, args: runtimeArgs(language, memoryMb) } } : {}),
        },
        events,
      );
    }
    return new SpawnedProcess({ label: language, executable, args: runtimeArgs(language, memoryMb), dir, ...(runAs ? { runAs } : {}) }, events);
  }

  async runOperator(request: OperatorRunRequest): Promise<OperatorOutcome> {
    let active: RuntimeProcess | null = null;
    const { limits } = request;
    const log = new CappedLog(limits.maxOutputBytes, () => active?.kill('output', outputExceeded(limits)));
    const done = (result: OperatorResult): OperatorOutcome => ({ ...result, logs: log.text(), logsTruncated: log.truncated });

    const checked = this.checkCodeblock(request.codeblock);
    if (typeof checked === 'string') return done({ status: 'fail', output: { error: checked }, message: checked });
    const codeblock = checked;
    const unavailable = this.unavailable(codeblock.language);
    if (unavailable) return done({ status: 'error', output: { error: unavailable }, message: unavailable });

    const control = new RunControl(Date.now() + limits.timeoutMs);
    control.watch(request.pollIntervalMs, () => request.isCancelled(), request.onHeartbeat);
    let proc: RuntimeProcess;
    try {
      const taken = await this.takeFor(codeblock, limits.memoryMb, request.reuse === true);
      proc = taken.proc;
      // A process of its own is a fresh one, whatever the operator asked.
      request = { ...request, reuse: taken.reuse };
    } catch (error) {
      control.stop();
      const message = `runner error: ${error instanceof Error ? error.message : String(error)}`;
      return done({ status: 'error', output: { error: message }, message });
    }
    active = proc;
    const helpers: RuntimeProcess[] = [];
    try {
      const args = [request.connection, request.payload, request.context];
      const started = await this.start(proc, codeblock, request.bashblock, limits, control, log);
      if ('kind' in started) return done(operatorFailure(started));
      const driver = this.driver(proc, started, codeblock.code, 'operator', args, request, control);
      const loaded = loadOutcome(await driver.load(), limits);
      if ('kind' in loaded) return done(operatorFailure(loaded));

      const has = (fn: string) => loaded.functions.includes(fn);
      const state: { last: Output | null } = { last: null };
      let result: OperatorResult | null = null;

      if (has('initialize')) {
        const init = await driver.call('initialize', control.deadline);
        if (init.kind !== 'ok') result = this.callFailure(init, 'initialize', limits, state.last);
      }
      let runValue: unknown = null;
      if (!result) {
        const run = await driver.call('run', control.deadline);
        if (run.kind === 'ok') runValue = run.value;
        else result = this.callFailure(run, 'run', limits, state.last);
      }
      if (!result && !has('check_completion')) result = { status: 'success', output: isRecord(runValue) ? runValue : { status: 'success' } };
      if (!result) result = await this.poll(request, control, driver, state);

      if (has('finish')) {
        let finish: CallResult | null = null;
        if (proc.alive) {
          finish = await driver.finish(Date.now() + this.finishTimeoutMs);
        } else {
          const target = await this.finishProcess(codeblock, proc.dir, started.file, limits, log, helpers);
          if (target) {
            active = target;
            finish = await this.invoke(target, { op: 'call', fn: 'finish', args }, Date.now() + this.finishTimeoutMs, null);
          }
        }
        if (finish && finish.kind !== 'ok') log.note(`finish did not complete: ${describeCall(finish, 'finish', this.finishTimeoutMs)}`);
      }
      return done(result);
    } catch (error) {
      const message = `runner error: ${error instanceof Error ? error.message : String(error)}`;
      return done({ status: 'error', output: { error: message }, message });
    } finally {
      // The outcome does not wait for the cleanup (kill is immediate; directory removal and a
      // reuse reset go on in the background, tracked by the pool).
      control.stop();
      proc.endRun();
      this.pool.release(proc, request.reuse === true);
      for (const helper of helpers) {
        helper.endRun();
        this.pool.release(helper, false);
      }
    }
  }

  async runAction(request: ActionRunRequest): Promise<ActionOutcome> {
    let active: RuntimeProcess | null = null;
    const { limits } = request;
    const log = new CappedLog(limits.maxOutputBytes, () => active?.kill('output', outputExceeded(limits)));
    const done = (result: ActionResult): ActionOutcome => ({ ...result, logs: log.text(), logsTruncated: log.truncated });

    const checked = this.checkCodeblock(request.codeblock);
    if (typeof checked === 'string') return done({ ok: false, kind: 'invalid', message: checked });
    const codeblock = checked;
    const unavailable = this.unavailable(codeblock.language);
    if (unavailable) return done({ ok: false, kind: 'error', message: unavailable });

    const control = new RunControl(Date.now() + limits.timeoutMs);
    let proc: RuntimeProcess;
    try {
      const taken = await this.takeFor(codeblock, limits.memoryMb, request.reuse === true);
      proc = taken.proc;
      request = { ...request, reuse: taken.reuse };
    } catch (error) {
      return done({ ok: false, kind: 'error', message: `runner error: ${error instanceof Error ? error.message : String(error)}` });
    }
    active = proc;
    try {
      const args = [request.connection, request.actionVariables, request.context];
      const fail = (failure: Failure): ActionOutcome => {
        const reported = failure.kind === 'cancelled' ? { kind: 'error' as const, message: 'cancelled' } : failure;
        return done({ ok: false, kind: reported.kind, message: reported.message });
      };
      const started = await this.start(proc, codeblock, request.bashblock, limits, control, log);
      if ('kind' in started) return fail(started);
      const driver = this.driver(proc, started, codeblock.code, 'action', args, request, control);
      const loaded = loadOutcome(await driver.load(), limits);
      if ('kind' in loaded) return fail(loaded);
      const run = await driver.call('run', control.deadline);
      if (run.kind === 'ok') return done({ ok: true, result: run.value ?? null });
      return done({ ok: false, kind: run.kind === 'timeout' ? 'timeout' : 'error', message: describeCall(run, 'run', limits.timeoutMs) });
    } catch (error) {
      return done({ ok: false, kind: 'error', message: `runner error: ${error instanceof Error ? error.message : String(error)}` });
    } finally {
      control.stop();
      proc.endRun();
      this.pool.release(proc, request.reuse === true);
    }
  }

  /** The run's calls: one exec request for the whole run, or one request per step. */
  private driver(
    proc: RuntimeProcess,
    started: Started,
    code: string,
    plan: ExecRequest['plan'],
    args: unknown[],
    request: { reuse?: boolean; pollIntervalMs?: number; checkCompletionTimeoutMs?: number },
    control: RunControl,
  ): Driver {
    const pollIntervalMs = request.pollIntervalMs ?? 0;
    if (!this.oneShot) {
      const invoke = (message: WireRequest, deadline: number, withControl: RunControl | null) => this.invoke(proc, message, deadline, withControl);
      return new StepDriver(invoke, proc, started.file, args, control, pollIntervalMs);
    }
    const message: ExecRequest = {
      op: 'exec',
      plan,
      file: started.file,
      ...(started.written ? {} : { code }),
      // A fresh process that wrote the code leaves its directory empty for the runner's one rmdir
      // (after an install step there may be much more in it: the runner removes that, off the run).
      ...(started.written || request.reuse === true ? {} : { clear: true as const }),
      args,
      pollIntervalMs,
      checkCompletionTimeoutMs: request.checkCompletionTimeoutMs ?? 0,
    };
    return new ExecDriver(proc, message, request.reuse === true, control, this.interruptGraceMs);
  }

  /**
   * After a reuse run: the process empties its own directory and moves into a new run directory
   * inside it. An exec asked for that already (the process did it right after its last line);
   * otherwise a recycle request does it.
   */
  private async reset(proc: RuntimeProcess): Promise<boolean> {
    const own = proc.takeSelfReset();
    if (own) {
      const ok = await raceUntil(own.done, Date.now() + RESET_TIMEOUT_MS);
      if (ok !== true) return false;
      proc.dir = own.dir;
      return true;
    }
    const dir = proc.nextRunDir();
    const result = await this.invoke(proc, { op: 'recycle', next: dir }, Date.now() + RESET_TIMEOUT_MS, null);
    if (result.kind !== 'ok') return false;
    proc.dir = dir;
    return true;
  }

  /** Why no run can start now (closed runner, missing interpreter), or null. */
  private unavailable(language: Language): string | null {
    if (this.closed) return 'the code runner is closed';
    if (this.disabled) return this.disabled;
    const problem = this.problems[language];
    if (problem) return problem;
    if (!this.executables[language]) return `no ${language === 'python' ? 'python3' : 'node'} executable on this worker`;
    return null;
  }

  /** Missing codeblock, unknown language or no code: the message; else the codeblock. */
  private checkCodeblock(codeblock: CodeBlock | null | undefined): CodeBlock | string {
    if (!codeblock || typeof codeblock !== 'object') return 'missing codeblock';
    const language = typeof codeblock.language === 'string' ? codeblock.language.trim().toLowerCase() : '';
    if (!language) return 'codeblock has no language';
    if (!(LANGUAGES as readonly string[]).includes(language)) return `unsupported language: ${codeblock.language} (supported: ${LANGUAGES.join(', ')})`;
    if (typeof codeblock.code !== 'string' || codeblock.code.trim() === '') return 'codeblock has no code';
    return { language: language as Language, code: codeblock.code };
  }

  /**
   * Install step run (the code written before it, as the step may look at it), interpreter ready,
   * output routed to the run's log. Without an install step, an exec writes the code itself.
   */
  private async start(
    proc: RuntimeProcess,
    codeblock: CodeBlock,
    bashblock: { code: string } | null | undefined,
    limits: RunLimits,
    control: RunControl,
    log: CappedLog,
  ): Promise<Started | Failure> {
    const file = join(proc.dir, CODE_FILE[codeblock.language]);
    const install = typeof bashblock?.code === 'string' && bashblock.code.trim() !== '' ? bashblock.code : null;
    const written = install !== null || !this.oneShot;
    if (written) {
      // A forked process makes its directory itself: it exists once the process is ready. A spawned
      // one starts in it, so its start overlaps with writing the code and the install step.
      if (proc.makesOwnDir) {
        const notReady = await readiness(proc, limits, control);
        if (notReady) return notReady;
      }
      await writeFile(file, codeblock.code, { mode: 0o600 });
      if (proc.runAs) await chown(file, proc.runAs.uid, proc.runAs.gid);
    }
    if (install !== null) {
      const failed = await runInstall(install, proc.dir, limits, control, log, proc.runAs, proc.cgroup, this.bwrap);
      if (failed) return failed;
    }
    const notReady = await readiness(proc, limits, control);
    if (notReady) return notReady;
    proc.beginRun(log, limits.maxOutputBytes);
    return { file, written };
  }

  /** check_completion every pollIntervalMs until success/failed, the completion timeout or the time limit. */
  private async poll(request: OperatorRunRequest, control: RunControl, driver: Driver, state: { last: Output | null }): Promise<OperatorResult> {
    const completionDeadline = Date.now() + request.checkCompletionTimeoutMs;
    const completionTimeout = (): OperatorResult => ({
      status: 'timeout',
      output: state.last ?? {},
      message: `check_completion did not report success or failed within ${request.checkCompletionTimeoutMs} ms`,
    });
    for (;;) {
      const checked = await driver.call('check_completion', Math.min(control.deadline, completionDeadline));
      if (checked.kind === 'timeout' && completionDeadline < control.deadline) return completionTimeout();
      if (checked.kind !== 'ok') return this.callFailure(checked, 'check_completion', request.limits, state.last);
      const value = checked.value;
      const status = isRecord(value) && typeof value.status === 'string' ? value.status.toLowerCase() : null;
      if (!isRecord(value) || status === null) {
        const message = 'check_completion must return an object with a status (running, success or failed)';
        return { status: 'error', output: { error: message, returned: value ?? null }, message };
      }
      if (status === 'success') return { status: 'success', output: value };
      if (status === 'failed') return { status: 'error', output: value, message: failedMessage(value) };
      if (status !== 'running') {
        const message = `check_completion returned an unknown status: ${value.status} (expected running, success or failed)`;
        return { status: 'error', output: value, message };
      }
      state.last = value;
      const next = await driver.pause(completionDeadline);
      if (next === 'completion') return completionTimeout();
      if (next === 'cancelled') return { status: 'cancelled', output: state.last };
      if (next === 'deadline') return hardTimeout(request.limits, 'check_completion polling', state.last);
    }
  }

  private callFailure(result: Exclude<CallResult, { kind: 'ok' }>, fn: string, limits: RunLimits, last: Output | null): OperatorResult {
    switch (result.kind) {
      case 'error': {
        const output: Output = { error: result.error.message };
        if (result.error.traceback) output.traceback = result.error.traceback;
        return { status: 'error', output, message: `${fn} failed: ${result.error.message}` };
      }
      case 'timeout':
        return hardTimeout(limits, fn, last);
      case 'cancelled':
        return { status: 'cancelled', output: last ?? {} };
      case 'died':
        return { status: 'error', output: { error: result.died.message }, message: `${fn} failed: ${result.died.message}` };
    }
  }

  /**
   * The run's process is gone (killed at the time limit, exited, out of memory): a fresh process
   * in the same working directory loads the code again so that finish is still called.
   */
  private async finishProcess(
    codeblock: CodeBlock,
    runDir: string,
    file: string,
    limits: RunLimits,
    log: CappedLog,
    helpers: RuntimeProcess[],
  ): Promise<RuntimeProcess | null> {
    const deadline = Date.now() + this.finishTimeoutMs;
    let helper: RuntimeProcess;
    try {
      helper = this.pool.takeFresh(codeblock.language, limits.memoryMb);
    } catch (error) {
      log.note(`finish not called: ${(error as Error).message}`);
      return null;
    }
    helpers.push(helper);
    const started = await raceUntil(helper.ready.then(() => true, () => false), deadline);
    if (started !== true) {
      log.note('finish not called: no runtime process could be started');
      return null;
    }
    // The run's directory (and what the run left in it) belonged to the run's identity: now the helper's.
    if (helper.runAs) await chownTree(runDir, helper.runAs).catch(() => {});
    // Its own directory stays its home, removed with it.
    const moved = await this.invoke(helper, { op: 'reset', dir: runDir }, deadline, null);
    if (moved.kind !== 'ok') {
      log.note(`finish not called: ${describeCall(moved, 'reset', this.finishTimeoutMs)}`);
      return null;
    }
    helper.dir = runDir;
    helper.beginRun(log, limits.maxOutputBytes);
    const loaded = await this.invoke(helper, { op: 'load', file, dir: runDir }, deadline, null);
    if (loaded.kind !== 'ok') {
      log.note(`finish not called: ${describeCall(loaded, 'load', this.finishTimeoutMs)}`);
      return null;
    }
    log.note('finish is called in a fresh process (the run process had ended)');
    return helper;
  }

  /**
   * One request, raced against the deadline and cancellation. On either, the call is interrupted
   * and given interruptGraceMs to unwind; a process that does not answer by then is killed.
   */
  private async invoke(proc: RuntimeProcess, message: WireRequest, deadline: number, control: RunControl | null): Promise<CallResult> {
    if (control?.cancelled) return { kind: 'cancelled' };
    if (!proc.alive) return { kind: 'died', died: new ProcessDied('killed', 'the runtime process is gone') };
    const { id, response } = proc.request(message);
    const settled = response.then(
      (answer): CallResult =>
        answer.ok ? { kind: 'ok', value: answer.value, ...(answer.functions ? { functions: answer.functions } : {}) } : { kind: 'error', error: answer.error },
      (error: unknown): CallResult => ({ kind: 'died', died: error instanceof ProcessDied ? error : new ProcessDied('exited', String(error)) }),
    );
    const first = control ? await control.race(settled, deadline) : await raceUntil(settled, deadline);
    if (first !== 'deadline' && first !== 'cancelled') return first;
    proc.interrupt(id);
    const after = await raceUntil(settled, Date.now() + this.interruptGraceMs);
    if (after === 'deadline' || (typeof after === 'object' && after.kind === 'died')) proc.kill('killed');
    return { kind: first === 'deadline' ? 'timeout' : 'cancelled' };
  }
}

/** Deadline and cancellation of one run; isCancelled and the heartbeat are polled in the background. */
class RunControl {
  cancelled = false;
  private readonly cancelledSignal: Promise<'cancelled'>;
  private fire: () => void = () => {};
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  /** One timer for the run's own deadline, shared by every wait on it (a run waits on it several times). */
  private expiry: Promise<'deadline'> | null = null;
  private expiryTimer: NodeJS.Timeout | null = null;

  constructor(readonly deadline: number) {
    this.cancelledSignal = new Promise<'cancelled'>((resolve) => {
      this.fire = () => resolve('cancelled');
    });
  }

  watch(intervalMs: number, isCancelled: () => Promise<boolean>, onHeartbeat?: () => void): void {
    const every = Math.max(10, intervalMs);
    const tick = async () => {
      if (this.stopped) return;
      try {
        onHeartbeat?.();
      } catch {
        // a failing heartbeat must not break the run
      }
      const cancelled = await Promise.resolve().then(isCancelled).catch(() => false);
      if (cancelled) return this.cancel();
      if (!this.stopped) this.timer = setTimeout(() => void tick(), every);
    };
    this.timer = setTimeout(() => void tick(), every);
  }

  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.fire();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
  }

  /** The first of: `work`, the deadline, cancellation. */
  async race<T>(work: Promise<T>, deadline = this.deadline): Promise<T | 'deadline' | 'cancelled'> {
    if (deadline !== this.deadline) {
      const result = await raceUntil(Promise.race([work, this.cancelledSignal]), deadline);
      return result;
    }
    if (!this.expiry) {
      this.expiry = new Promise<'deadline'>((resolve) => {
        this.expiryTimer = setTimeout(() => resolve('deadline'), Math.max(0, deadline - Date.now()));
      });
    }
    return Promise.race([work, this.expiry, this.cancelledSignal]);
  }

  /** Waits until `at` (capped by the deadline): 'slept', or what interrupted the wait. */
  async sleepUntil(at: number): Promise<'slept' | 'deadline' | 'cancelled'> {
    if (this.cancelled) return 'cancelled';
    const wake = new Promise<'slept'>((resolve) => setTimeout(() => resolve('slept'), Math.max(0, Math.min(at, this.deadline) - Date.now())));
    const result = await this.race(wake);
    return result === 'slept' && Date.now() >= this.deadline ? 'deadline' : result;
  }
}

/** `work` or 'deadline', whichever comes first; the timer goes with the wait. */
async function raceUntil<T>(work: Promise<T>, deadline: number): Promise<T | 'deadline'> {
  let timer: NodeJS.Timeout | undefined;
  const expiry = new Promise<'deadline'>((resolve) => {
    timer = setTimeout(() => resolve('deadline'), Math.max(0, deadline - Date.now()));
  });
  try {
    return await Promise.race([work, expiry]);
  } finally {
    clearTimeout(timer);
  }
}

/** One request per step: load, each call, finish; the runner sleeps between polls. */
class StepDriver implements Driver {
  constructor(
    /** ProcessCodeRunner.invoke on this run's process. */
    private readonly invoke: (message: WireRequest, deadline: number, control: RunControl | null) => Promise<CallResult>,
    private readonly proc: RuntimeProcess,
    private readonly file: string,
    private readonly args: unknown[],
    private readonly control: RunControl,
    private readonly pollIntervalMs: number,
  ) {}

  load(): Promise<CallResult> {
    return this.invoke({ op: 'load', file: this.file, dir: this.proc.dir }, this.control.deadline, this.control);
  }

  call(fn: string, deadline: number): Promise<CallResult> {
    return this.invoke({ op: 'call', fn, args: this.args }, deadline, this.control);
  }

  async pause(completionDeadline: number): Promise<'poll' | 'completion' | 'deadline' | 'cancelled'> {
    if (Date.now() >= completionDeadline) return 'completion';
    const waited = await this.control.sleepUntil(Math.min(Date.now() + this.pollIntervalMs, completionDeadline));
    return waited === 'slept' ? 'poll' : waited;
  }

  finish(deadline: number): Promise<CallResult> {
    return this.invoke({ op: 'call', fn: 'finish', args: this.args }, deadline, null);
  }
}

type Read = { event: ExecEvent } | { died: ProcessDied } | 'deadline' | 'cancelled';

const INTERRUPTED: WireError = {
  type: 'Interrupted',
  message: 'Interrupted: interrupted by the runner (time limit or cancellation)',
  traceback: '',
};

/**
 * The whole run as one exec request; its lines are read in the order of the run's logic, each as
 * the result of the call the logic makes next. The process polls check_completion by itself
 * (pause() reads the next poll's line, or the completion timeout it saw).
 *
 * Time limit, cancellation and the finish budget stay here: when one is reached, the runner asks
 * the exec to give up (an abandon line, plus SIGINT for Python) after `read` lines; the process
 * answers with an `interrupted` line and goes on to finish, or, when the abandon crossed the line
 * that announced finish, lets finish run. A process that does neither within interruptGraceMs is
 * killed, as a call that does not stop is with StepDriver.
 */
class ExecDriver implements Driver {
  private readonly id: number;
  private readonly events: ExecEvents;
  /** Lines taken so far. */
  private read = 0;
  /** The exec sent its last line. */
  private ended = false;
  /** A check_completion result read by pause(), handed to the next call(). */
  private stash: CallResult | null = null;
  /** finish's result, when its line came while the runner was giving up on an earlier step. */
  private finished: CallResult | null = null;

  constructor(
    private readonly proc: RuntimeProcess,
    message: ExecRequest,
    recycle: boolean,
    private readonly control: RunControl,
    private readonly graceMs: number,
  ) {
    const sent = proc.exec(message, recycle);
    this.id = sent.id;
    this.events = sent.events;
  }

  load(): Promise<CallResult> {
    return this.expect('load', this.control.deadline);
  }

  call(fn: string, deadline: number): Promise<CallResult> {
    const stashed = this.stash;
    this.stash = null;
    return stashed ? Promise.resolve(stashed) : this.expect(fn, deadline);
  }

  async pause(completionDeadline: number): Promise<'poll' | 'completion' | 'deadline' | 'cancelled'> {
    // The process sleeps, then polls; the next line is that poll's result. The runner's completion
    // deadline is measured from when it read run's line, after the process started polling: the
    // process sees the completion timeout first, this one only ends a poll that does not return.
    const got = await this.next(Math.min(this.control.deadline, completionDeadline), this.control);
    if (got === 'deadline' || got === 'cancelled') {
      const where = await this.giveUp();
      if (got === 'deadline' && completionDeadline < this.control.deadline) return 'completion';
      if (where === 'sleep') return got;
      this.stash = { kind: got === 'deadline' ? 'timeout' : 'cancelled' };
      return 'poll';
    }
    if ('died' in got) {
      this.stash = { kind: 'died', died: got.died };
      return 'poll';
    }
    if ('completion' in got.event) return 'completion';
    this.stash = this.asCall(got.event, 'check_completion');
    return 'poll';
  }

  async finish(deadline: number): Promise<CallResult> {
    if (this.finished) return this.finished;
    if (this.ended) return { kind: 'died', died: new ProcessDied('protocol', 'the runtime ended the run without calling finish') };
    const got = await this.next(deadline, null);
    if (got === 'deadline' || got === 'cancelled') {
      await this.giveUp();
      return { kind: 'timeout' };
    }
    if ('died' in got) return { kind: 'died', died: got.died };
    return this.asCall(got.event, 'finish');
  }

  /** The next line as the result of `fn`; at the deadline or cancellation, the exec gives up. */
  private async expect(fn: string, deadline: number): Promise<CallResult> {
    const got = await this.next(deadline, this.control);
    if (got === 'deadline' || got === 'cancelled') {
      await this.giveUp();
      return { kind: got === 'deadline' ? 'timeout' : 'cancelled' };
    }
    if ('died' in got) return { kind: 'died', died: got.died };
    return this.asCall(got.event, fn);
  }

  /** The next line; the lines already read come before a deadline or cancellation. */
  private async next(deadline: number, control: RunControl | null): Promise<Read> {
    const ready = this.take();
    if (ready) return ready;
    if (control?.cancelled) return 'cancelled';
    const waited = control ? await control.race(this.events.available(), deadline) : await raceUntil(this.events.available(), deadline);
    if (waited === 'deadline' || waited === 'cancelled') return this.take() ?? waited;
    return this.take() ?? { died: new ProcessDied('protocol', 'the runtime sent no line') };
  }

  private take(): { event: ExecEvent } | { died: ProcessDied } | null {
    let event: ExecEvent | null;
    try {
      event = this.events.take();
    } catch (error) {
      return { died: error instanceof ProcessDied ? error : new ProcessDied('exited', String(error)) };
    }
    if (!event) return null;
    this.read += 1;
    if (event.done) this.ended = true;
    return { event };
  }

  /**
   * Asks the exec to give up what it is doing and waits (interruptGraceMs) until it has: an
   * `interrupted` line (where it was), or a line after which only finish runs (the abandon came
   * too late to matter). Returns where it was interrupted, null otherwise; kills a process that
   * does not answer in time.
   */
  private async giveUp(): Promise<ExecStep | 'sleep' | null> {
    if (this.ended) return null;
    this.proc.interruptExec(this.id, this.read);
    const graceEnd = Date.now() + this.graceMs;
    for (;;) {
      const got = await this.next(graceEnd, null);
      if (got === 'deadline' || got === 'cancelled' || 'died' in got) {
        this.proc.kill('killed');
        return null;
      }
      const event = got.event;
      if ('interrupted' in event) return event.interrupted;
      if ('fn' in event && event.fn === 'finish') {
        this.finished = this.asCall(event, 'finish');
        return null;
      }
      if (event.next === 'finish' || event.done) return null;
      // A step that ended before the abandon arrived: the exec gives up the next one.
    }
  }

  /** A line read as the result of `fn`; a line the run's logic cannot have led to is a protocol error. */
  private asCall(event: ExecEvent, fn: string): CallResult {
    if ('fn' in event && event.fn === fn) {
      if (!event.ok) return { kind: 'error', error: event.error };
      return { kind: 'ok', value: event.value, ...(event.functions ? { functions: event.functions } : {}) };
    }
    // SIGINT from the user code itself: the call failed with it, as with one request per step.
    if ('interrupted' in event) return { kind: 'error', error: INTERRUPTED };
    const message = `unexpected protocol message from the runtime (expected the result of ${fn})`;
    this.proc.kill('protocol', message);
    return { kind: 'died', died: new ProcessDied('protocol', message) };
  }
}

/** lchown of a directory and everything in it (a few files: what one run left). */
async function chownTree(dir: string, owner: RunAs): Promise<void> {
  await lchown(dir, owner.uid, owner.gid);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) await chownTree(path, owner);
    else await lchown(path, owner.uid, owner.gid);
  }
}

/** util-linux's setpriv (Debian: always there), for dropping the identity after joining a cgroup; null without it. */
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((path) => existsSync(path)) ?? null;

/**
 * The install step joins the run's cgroup before bash starts: `sh` (still the service's user) writes
 * its own pid into the cgroup, then exec's setpriv, which drops to the run's identity (real, effective
 * and saved ids, no groups) and exec's bash; one pid throughout. Moving bash in after spawn returned
 * raced its first commands: a `setsid job &` forked before the move escaped the cgroup and outlived
 * the run (seen on a loaded machine).
 */
function joinThenExec(procs: string, runAs: RunAs | undefined, code: string): [string, string[]] {
  const drop = runAs && SETPRIV ? [SETPRIV, `--reuid=${runAs.uid}`, `--regid=${runAs.gid}`, '--clear-groups', '--'] : [];
  return ['/bin/sh', ['-c', 'echo $$ > "$0" && exec "$@"', procs, ...drop, 'bash', '-c', code]];
}

/** bashblock: `bash -c` in the run directory, scrubbed env, within the run's time limit. */
async function runInstall(
  code: string,
  dir: string,
  limits: RunLimits,
  control: RunControl,
  log: CappedLog,
  runAs: RunAs | undefined,
  cgroup: string | undefined,
  sandbox: BwrapLayout | undefined,
): Promise<Failure | null> {
  // In a bubblewrap sandbox of its own (pid namespace included): what it starts, detached or not,
  // dies with it (the namespace's init ends when bash does), and it sees nothing of the runs.
  // As root with a run cgroup: joined before bash starts (joinThenExec).
  const joinFirst = !sandbox && cgroup !== undefined && (runAs === undefined || SETPRIV !== null);
  const [file, args]: [string, string[]] = sandbox
    ? ['bwrap', bwrapArgs({ ...sandbox, writable: [dir] }).concat('--chdir', dir, '--', 'bash', '-c', code)]
    : joinFirst && cgroup !== undefined
      ? joinThenExec(join(cgroup, 'cgroup.procs'), runAs, code)
      : ['bash', ['-c', code]];
  const child = spawn(file, args, {
    cwd: dir,
    env: scrubbedEnv(dir),
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    // Without the join-first wrapper the identity is dropped by spawn itself.
    ...(runAs && !joinFirst ? { uid: runAs.uid, gid: runAs.gid } : {}),
  });
  // No setpriv: moved into the cgroup from here, once spawned. Commands bash runs before the move
  // (on a loaded machine, its first few) escape the cgroup; README, Security, says so.
  if (cgroup && !joinFirst && child.pid !== undefined) {
    try {
      writeFileSync(join(cgroup, 'cgroup.procs'), String(child.pid));
    } catch {
      // the process (and its cgroup) is gone: the run ends anyway
    }
  }
  const stderrTail = new TailBuffer(INSTALL_TAIL_BYTES);
  child.stdout.on('data', (chunk: Buffer) => log.append('install', chunk));
  child.stderr.on('data', (chunk: Buffer) => {
    log.append('install', chunk);
    stderrTail.append(chunk);
  });
  const ended = new Promise<{ code: number | null; signal: string | null } | Error>((resolve) => {
    child.once('error', resolve);
    child.once('exit', (code, signal) => {
      // the last stderr bytes may still be in flight
      const timer = setTimeout(() => resolve({ code, signal }), 100);
      child.once('close', () => {
        clearTimeout(timer);
        resolve({ code, signal });
      });
    });
  });
  try {
    const result = await control.race(ended);
    if (result === 'deadline' || result === 'cancelled') {
      killGroup(child.pid);
      await ended;
      if (result === 'cancelled') return { kind: 'cancelled' };
      return { kind: 'timeout', message: `time limit of ${limits.timeoutMs} ms exceeded while running the bashblock` };
    }
    if (result instanceof Error) return { kind: 'error', message: `bashblock could not start: ${result.message}` };
    if (result.code === 0) return null;
    const how = result.signal ? `signal ${result.signal}` : `exit code ${result.code}`;
    const tail = stderrTail.text().trim();
    return { kind: 'error', message: `bashblock failed (${how})${tail ? `: ${tail}` : ''}` };
  } finally {
    // Background jobs of the install step do not outlive it.
    killGroup(child.pid);
  }
}

/** Waits until the process is ready (at once when it is): null, or why the run cannot start. */
async function readiness(proc: RuntimeProcess, limits: RunLimits, control: RunControl): Promise<Failure | null> {
  if (proc.isReady) return null;
  const ready = await control.race(proc.ready.then(
    () => null,
    (error: unknown) => (error instanceof ProcessDied ? error.message : String(error)),
  ));
  if (ready === 'deadline') return { kind: 'timeout', message: `time limit of ${limits.timeoutMs} ms exceeded while starting the runtime` };
  if (ready === 'cancelled') return { kind: 'cancelled' };
  if (ready !== null) return { kind: 'error', message: ready };
  return null;
}

/** A load's result: the functions when the code defines run, else why the run cannot go on. */
function loadOutcome(loaded: CallResult, limits: RunLimits): { functions: string[] } | Failure {
  switch (loaded.kind) {
    case 'ok': {
      const functions = loaded.functions ?? [];
      if (!functions.includes('run')) return { kind: 'invalid', message: 'invalid code: no run function is defined' };
      return { functions };
    }
    case 'error':
      if (loaded.error.invalid) return { kind: 'invalid', message: `invalid code: ${loaded.error.message}` };
      return { kind: 'error', message: `loading the code failed: ${loaded.error.message}`, traceback: loaded.error.traceback };
    case 'timeout':
      return { kind: 'timeout', message: `time limit of ${limits.timeoutMs} ms exceeded while loading the code` };
    case 'cancelled':
      return { kind: 'cancelled' };
    case 'died':
      return { kind: 'error', message: loaded.died.message };
  }
}

function operatorFailure(failure: Failure): OperatorResult {
  switch (failure.kind) {
    case 'invalid':
      return { status: 'fail', output: { error: failure.message }, message: failure.message };
    case 'error':
      return { status: 'error', output: failure.traceback ? { error: failure.message, traceback: failure.traceback } : { error: failure.message }, message: failure.message };
    case 'timeout':
      return { status: 'timeout', output: {}, message: failure.message };
    case 'cancelled':
      return { status: 'cancelled', output: {} };
  }
}

function hardTimeout(limits: RunLimits, during: string, last: Output | null): OperatorResult {
  return { status: 'timeout', output: last ?? {}, message: `time limit of ${limits.timeoutMs} ms exceeded during ${during}` };
}

function describeCall(result: Exclude<CallResult, { kind: 'ok' }>, fn: string, timeoutMs: number): string {
  switch (result.kind) {
    case 'error':
      return result.error.message;
    case 'timeout':
      return `time limit of ${timeoutMs} ms exceeded while running ${fn}`;
    case 'cancelled':
      return `${fn} was cancelled`;
    case 'died':
      return result.died.message;
  }
}

function failedMessage(value: Output): string {
  for (const key of ['message', 'error', 'reason']) {
    const text = value[key];
    if (typeof text === 'string' && text) return `check_completion returned status failed: ${text}`;
  }
  return 'check_completion returned status failed';
}

function outputExceeded(limits: RunLimits): string {
  return `output limit exceeded: the code wrote more than ${limits.maxOutputBytes} bytes to stdout/stderr`;
}

function isRecord(value: unknown): value is Output {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
