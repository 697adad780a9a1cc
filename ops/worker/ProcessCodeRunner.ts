import { mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type {
  ActionOutcome,
  ActionRunRequest,
  CodeBlock,
  CodeRunner,
  Language,
  ModuleRunner,
  ModuleRunRequest,
  OperatorOutcome,
  OperatorRunRequest,
  ReuseScope,
  RunLimits,
  RunOutputSink,
  SyntaxCheck,
  SyntaxChecker,
} from '../../shared/ports/CodeRunner.ts';
import { CappedLog } from './boundedOutput.ts';
import { DEFAULT_RUN_OUTPUT_LIMITS, RunOutput, type RunOutputLimits } from './runOutput.ts';
import { checkCodeblock } from './checkCodeblock.ts';
import type { CallResult, Driver } from './Driver.ts';
import { ExecDriver } from './ExecDriver.ts';
import { finishProcess } from './finishProcess.ts';
import { invokeRequest, type Invoke } from './invokeRequest.ts';
import { pollCompletion } from './pollCompletion.ts';
import { ProcessStarter } from './ProcessStarter.ts';
import { resetForReuse } from './resetForReuse.ts';
import { RunControl } from './RunControl.ts';
import {
  callFailure,
  describeCall,
  isRecord,
  loadOutcome,
  operatorFailure,
  outputExceeded,
  type ActionResult,
  type Failure,
  type OperatorResult,
  type Output,
} from './runOutcome.ts';
import type { ExecRequest, RuntimeProcess, WireRequest } from './RuntimeProcess.ts';
import { makeRunDir, pythonFor, removeRunDir, resolvePython, runDirName, RunIdentities, type BwrapLayout, type RunAs, type RunAsRange } from './sandbox.ts';
import { sandboxLayout } from './sandboxLayout.ts';
import { RunCgroups } from './runCgroups.ts';
import { DEFAULT_RUN_SANDBOX, SANDBOX_LIBRARY, sandboxLayoutLines, sandboxLibraryBuilt, type RunSandboxLimits } from './runSandbox.ts';
import { findSystemProgram } from './systemPrograms.ts';
import { startRun, type Started } from './startRun.ts';
import { StepDriver } from './StepDriver.ts';
import { syntaxCheck } from './syntaxCheck.ts';
import { WarmPool } from './WarmPool.ts';

export interface ProcessCodeRunnerOptions {
  /** Warm processes per (language, memoryMb), started ahead of demand. Default 2; 0 = on demand. */
  poolSize?: number;
  /** Distinct (language, memoryMb) pools kept warm. Default 4. */
  maxPoolKeys?: number;
  /** Pools to start now rather than at their first run. */
  prewarm?: Array<{ language: Language; memoryMb: number }>;
  /** Python interpreter (absolute); default: the first python3 in the system directories (sandbox.ts, resolvePython). */
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
  /**
   * Idle reuse processes kept per reuse key (scope: code item and acting user; language, memoryMb):
   * the reuse runs of one scope expected at once. Default max(poolSize, 1).
   */
  maxIdleReusable?: number;
  /** Idle reuse processes kept in all keys together (the least recently used go first). Default 2 x maxIdleReusable. */
  maxIdleReusableTotal?: number;
  /**
   * Run user code (and bashblocks) as this unprivileged user, or (with `count` > 1) as one of
   * `count` consecutive uid/gid pairs, a distinct one per live process. Without it, user code has
   * the service's uid: the scrubbed environment hides the secrets from its env, but same-uid code
   * can still read /proc/<service pid>/environ and the service's files. Needs a service able to
   * setuid. The service passes its default range when it runs as root (sandbox.ts, decideSandbox).
   */
  runAs?: RunAs | RunAsRange;
  /**
   * With runAs (as root): every run process in namespaces, a root and limits of its own
   * (native/sandbox.c; runSandbox.ts): the defaults, or these limits. `false` turns it off (tests of
   * what lies beneath it only: a runner without it lets runs see each other and the host).
   * Unless `false`, CODERUN_ISOLATION=off in the environment turns it off too (read once, here):
   * the baseline of the sandbox bench and a diagnostics switch, never for production.
   */
  sandbox?: Partial<RunSandboxLimits> | false;
  /** Hidden from every run's sandbox (DATA_DIR, LOG_DIR), with the checkout. */
  hidden?: ReadonlyArray<string>;
  /** Every run fails with this message (code runs refused: no sandbox on this host, decideSandbox). */
  disabled?: string;
  /**
   * Not root: the fork servers (and every install step) run inside bubblewrap sandboxes (sandbox.ts,
   * bwrapArgs) in which `hidden` (DATA_DIR) and the service's code tree are empty, the runs'
   * directories live in a private root of their own, and processes are only ever forked (a process
   * the service would spawn or exec itself could not be wrapped with its pid known: refused).
   * `unshareNet`: each sandbox gets a network namespace of its own (WORKER_NETWORK=none).
   * Exclusive with runAs.
   */
  bwrap?: { hidden: ReadonlyArray<string>; unshareNet?: boolean };
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
  /**
   * How much of a run's output reaches its request's `output` sink, line by line (runOutput.ts):
   * lines and bytes per run, bytes per line, the delay before an unfinished line is handed on.
   */
  outputLines?: Partial<RunOutputLimits>;
}

/** A run in progress (operator, action or AI module), as a shutdown reports it (ops/shutdown). */
export interface ActiveRun {
  kind: 'operator' | 'action' | 'module';
  /** From the run's context: the task and the action it is for, and its session, when it has them. */
  taskLaui: string | null;
  taskName: string | null;
  actionLaui: string | null;
  actionName: string | null;
  sessionId: string | null;
  startedAt: Date;
}

/** An ActiveRun and what stopRuns needs of it: its process, once it has one, and why it was stopped. */
interface RunRecord extends ActiveRun {
  proc: RuntimeProcess | null;
  stopped: string | null;
}

const textOf = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/**
 * CodeRunner on separate OS processes (never node:vm): one python3 / node process per run (forked
 * from a Python or a node fork server, else spawned), taken from a warm pool, in a private temp
 * directory with a scrubbed environment, a hard time limit
 * (SIGKILL to the process group), a memory limit and capped output. See docs/decisions.md
 * ("Code runner") for the protocol, the module forms and the reuse trade-off.
 *
 * This class composes the steps of a run, each in a file of its own: checkCodeblock, the process
 * (WarmPool, ProcessStarter), startRun (code file, installStep, readiness), a Driver (ExecDriver or
 * StepDriver) for load and the calls, pollCompletion, finishProcess when the run's process is gone,
 * runOutcome for the outcome, resetForReuse after a reuse run; RunControl holds deadline and cancellation.
 */
export class ProcessCodeRunner implements CodeRunner, ModuleRunner, SyntaxChecker {
  private readonly pool: WarmPool;
  private readonly executables: Record<Language, string | null>;
  private readonly finishTimeoutMs: number;
  private readonly interruptGraceMs: number;
  private readonly tmpRoot: string;
  /** Why runs of a language cannot happen here, beyond a missing interpreter. */
  private readonly problems: Partial<Record<Language, string>> = {};
  private readonly disabled: string | undefined;
  /** The bubblewrap sandbox of every fork server and install step (undefined: none). */
  private readonly bwrap: BwrapLayout | undefined;
  /** The fork servers and identities the runtime processes are started with. */
  private readonly starter: ProcessStarter;
  private readonly oneShot: boolean;
  private readonly outputLimits: RunOutputLimits;
  /** The process and CPU cgroups of the runs' sandboxes (as root). */
  private readonly cgroups: RunCgroups | null;
  private readonly sandboxLimits: RunSandboxLimits | null;
  /** CODERUN_ISOLATION=off turned the run sandbox off (as root): runs see each other; the service warns. */
  readonly isolationSwitchedOff: boolean;
  private closed = false;
  /** The runs in progress (activeRuns, stopRuns). */
  private readonly runs = new Set<RunRecord>();
  /** Set by stopRuns: every later run is refused with it. */
  private stopMessage: string | null = null;

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
    // unshareNet (WORKER_NETWORK=none): a network namespace per sandbox, with only its own loopback.
    this.bwrap = sandbox
      ? { ...sandboxLayout(sandbox.hidden, this.tmpRoot, [this.executables.python, this.executables.javascript]), ...(sandbox.unshareNet ? { unshareNet: true } : {}) }
      : undefined;
    const runAs = options.runAs ? { uid: options.runAs.uid, gid: options.runAs.gid } : undefined;
    const identities = options.runAs ? new RunIdentities({ count: 1, ...options.runAs }) : null;
    this.disabled = options.disabled;
    this.oneShot = options.protocol !== 'steps';
    this.outputLimits = { ...DEFAULT_RUN_OUTPUT_LIMITS, ...options.outputLines };
    const headroom = options.memoryHeadroomMb ?? 64;
    if (runAs && this.executables.python) {
      // The run user must be able to read the interpreter's standard library (a pyenv one under a
      // 0700 /root cannot: lazy imports would fail after the privilege drop): else the system one.
      const candidates = [...new Set([this.executables.python, findSystemProgram('python3')].filter((python) => python !== null))];
      const usable = pythonFor(candidates, runAs);
      if (!usable) {
        this.problems.python = `no python3 that the run user (uid ${runAs.uid}) can use (tried ${candidates.join(', ')}: not readable by that user, or does not start as it)`;
      }
      this.executables.python = usable;
    }
    const maxKeys = options.maxPoolKeys ?? 4;
    // The service always passes its limits: the switch wins over them, not over an explicit false.
    this.isolationSwitchedOff = Boolean(runAs) && options.sandbox !== false && process.env.CODERUN_ISOLATION === 'off';
    const isolated = options.sandbox !== false && !this.isolationSwitchedOff;
    if (runAs && isolated && !sandboxLibraryBuilt()) {
      const missing = `the run sandbox is not built (${SANDBOX_LIBRARY}): run npm ci, which builds it with the nodefork addon (a C compiler and Node's headers are needed)`;
      this.problems.python ??= missing;
      this.problems.javascript ??= missing;
    }
    const limits = { ...DEFAULT_RUN_SANDBOX, ...(options.sandbox || {}) };
    this.cgroups = runAs && isolated ? new RunCgroups(limits) : null;
    this.sandboxLimits = this.cgroups ? limits : null;
    this.starter = new ProcessStarter({
      ...(this.cgroups ? { sandbox: { layout: sandboxLayoutLines(options.hidden ?? [], [this.executables.python, this.executables.javascript]), limits, cgroups: this.cgroups } } : {}),
      executables: this.executables,
      runAs,
      identities,
      bwrap: this.bwrap,
      memoryHeadroomMb: headroom,
      pythonForkServer: options.pythonForkServer !== false,
      nodeForkServer: options.nodeForkServer !== false,
      // One per memory limit in use, and the pool keeps at most maxKeys (language, limit) pools.
      maxNodeForkServers: maxKeys,
      closed: () => this.closed,
    });
    if (this.bwrap) {
      if (!this.starter.forkServer) this.problems.python = 'Python runs need the Python fork server in the bubblewrap sandbox (it is turned off or python3 is missing)';
      if (!this.starter.forksNode) this.problems.javascript = 'JavaScript runs need the node fork server in the bubblewrap sandbox (it is turned off or the nodefork addon is not built)';
    }
    const maxIdleReusable = options.maxIdleReusable ?? Math.max(options.poolSize ?? 2, 1);
    this.pool = new WarmPool({
      size: options.poolSize ?? 2,
      maxKeys,
      maxRunsPerProcess: options.maxRunsPerProcess ?? 10_000,
      maxIdleReusable,
      maxIdleReusableTotal: options.maxIdleReusableTotal ?? 2 * maxIdleReusable,
      makeDir: (language, memoryMb) => (this.cgroups || this.starter.forkedBy(language, memoryMb) ? runDirName(this.tmpRoot) : makeRunDir(this.tmpRoot)),
      // The same answer as makeDir's, just before it in the same turn (launch runs in the constructor).
      start: (language, memoryMb, dir) => this.starter.startProcess(language, memoryMb, dir, this.starter.forkedBy(language, memoryMb)),
      reset: (proc) => resetForReuse(proc, this.invoke),
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

  /** Run identities held by live processes, and processes in line for one (null: no identities); for diagnostics and tests. */
  runIdentities(): { held: number; waiting: number } | null {
    const identities = this.starter.identities;
    return identities ? { held: identities.held, waiting: identities.waiting.all } : null;
  }

  /** Process id of the Python fork server, when one runs; for diagnostics and tests. */
  forkServerPids(): number[] {
    return this.starter.forkServer?.pids() ?? [];
  }

  /** Process ids of the node fork servers that run; for diagnostics and tests. */
  nodeForkServerPids(): number[] {
    return this.starter.nodeForkServerPids();
  }

  /**
   * Resolves when the cleanup of the runs that returned so far is done (process gone, directory
   * removed, reuse process reset). Outcomes are returned before that cleanup finishes.
   */
  async cleanedUp(): Promise<void> {
    await this.pool.settled();
  }

  reuseScopes(): ReuseScope[] {
    return this.pool.scopes();
  }

  async retire(match: (scope: ReuseScope) => boolean): Promise<void> {
    await this.pool.retire(match);
  }

  /** The runs in progress now, oldest first. */
  activeRuns(): ActiveRun[] {
    return [...this.runs]
      .map(({ kind, taskLaui, taskName, actionLaui, actionName, sessionId, startedAt }) => ({ kind, taskLaui, taskName, actionLaui, actionName, sessionId, startedAt }))
      .sort((a, b) => a.startedAt.getTime() - b.startedAt.getTime());
  }

  /**
   * Stops every run in progress at once (a shutdown whose grace period is over): SIGKILL to each
   * run's process group (or to its process as soon as it has one), and each run ends as an error
   * whose message (and output `error`) is `message`, without its finish hook. Every later run is
   * refused with `message`. Returns how many runs were stopped.
   */
  stopRuns(message: string): number {
    this.stopMessage ??= message;
    for (const run of this.runs) {
      run.stopped ??= message;
      run.proc?.kill('killed', message);
    }
    return this.runs.size;
  }

  /** A run begins: tracked until its outcome is made (its `done`), described by its context. */
  private begin(kind: ActiveRun['kind'], context: Record<string, unknown>): RunRecord {
    const run: RunRecord = {
      kind,
      taskLaui: textOf(context.task_laui),
      taskName: textOf(context.task_name),
      actionLaui: textOf(context.action_laui),
      actionName: textOf(context.action_name),
      sessionId: textOf(context.session_id),
      startedAt: new Date(),
      proc: null,
      stopped: null,
    };
    this.runs.add(run);
    return run;
  }

  /** The run has its process: one stopped meanwhile is killed at once. */
  private attach(run: RunRecord, proc: RuntimeProcess): void {
    run.proc = proc;
    if (run.stopped !== null) proc.kill('killed', run.stopped);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.pool.close();
    await this.starter.close();
    this.cgroups?.close();
    // What is left of the runs' private root (directories of processes killed before they were removed).
    if (this.bwrap) await removeRunDir(this.tmpRoot).catch(() => {});
  }

  /**
   * An error the code raised at a sandbox limit (a full disk, no process left), before its
   * supervisor stopped the run there, names the limit and its setting as the supervisor's would.
   */
  private namingLimits(message: string): string {
    const limits = this.sandboxLimits;
    if (!limits || /WORKER_(DISK_MB|MAX_PROCESSES|SHM_MB)=/.test(message)) return message;
    if (/ENOSPC|No space left on device/.test(message)) return `${message} (the run filled its disk: WORKER_DISK_MB=${limits.diskMb} MB)`;
    if (/EAGAIN|Resource temporarily unavailable/.test(message)) return `${message} (the run may have hit its process limit: WORKER_MAX_PROCESSES=${limits.maxProcesses})`;
    return message;
  }

  /**
   * The run's process: one of its own (never pooled or reused) for code that needs an exec'd node,
   * else the pool's: for a reuse run with a scope, one that only ever served that scope; without a
   * scope there is no owner to bind a process to, so a fresh one, not reused either.
   */
  private async takeFor(codeblock: { language: Language; code: string }, memoryMb: number, request: { reuse?: boolean; reuseScope?: ReuseScope | null }): Promise<{ proc: RuntimeProcess; reuse: boolean }> {
    const scope = request.reuse === true ? (request.reuseScope ?? null) : null;
    if (!this.starter.needsExecNode(codeblock)) return { proc: await this.pool.take(codeblock.language, memoryMb, scope), reuse: scope !== null };
    return { proc: this.pool.takeOwn(() => this.starter.startProcess('javascript', memoryMb, runDirName(this.tmpRoot), this.starter.forkServer)), reuse: false };
  }

  async runOperator(request: OperatorRunRequest): Promise<OperatorOutcome> {
    let active: RuntimeProcess | null = null;
    const { limits } = request;
    const log = this.runLog(limits, request.output, () => active?.kill('output', outputExceeded(limits)));
    const run = this.begin('operator', request.context);
    const done = async (result: OperatorResult): Promise<OperatorOutcome> => {
      this.runs.delete(run);
      await log.settle();
      log.end();
      // A run stopped by stopRuns says so, whatever its killed process made of it (one that had
      // succeeded just before keeps its success).
      const stopped: OperatorResult | null = run.stopped === null || result.status === 'success' ? null : { status: 'error', output: { error: run.stopped }, message: run.stopped };
      const named = stopped ?? (result.status === 'error' ? { ...result, message: this.namingLimits(result.message) } : result);
      return { ...named, logs: log.text(), logsTruncated: log.truncated };
    };

    const checked = checkCodeblock(request.codeblock);
    if (typeof checked === 'string') return await done({ status: 'fail', output: { error: checked }, message: checked });
    const codeblock = checked;
    const unavailable = this.unavailable(codeblock.language);
    if (unavailable) return await done({ status: 'error', output: { error: unavailable }, message: unavailable });

    const control = new RunControl(Date.now() + limits.timeoutMs);
    control.watch(request.pollIntervalMs, () => request.isCancelled(), request.onHeartbeat);
    let proc: RuntimeProcess;
    try {
      const taken = await this.takeFor(codeblock, limits.memoryMb, request);
      proc = taken.proc;
      this.attach(run, proc);
      // A process of its own (or a run without a scope) is a fresh one, whatever the operator asked.
      request = { ...request, reuse: taken.reuse };
    } catch (error) {
      control.stop();
      const message = `runner error: ${error instanceof Error ? error.message : String(error)}`;
      return await done({ status: 'error', output: { error: message }, message });
    }
    active = proc;
    const helpers: RuntimeProcess[] = [];
    try {
      const args = [request.connection, request.payload, request.context];
      const waited = await this.identityFor(proc, limits, control);
      if (waited) return await done(operatorFailure(waited));
      const started = await startRun({ oneShot: this.oneShot, invoke: this.invoke }, proc, codeblock, request.bashblock, limits, control, log);
      if ('kind' in started) return await done(operatorFailure(started));
      const driver = this.driver(proc, started, codeblock.code, 'operator', args, request, control);
      const loaded = loadOutcome(await driver.load(), limits);
      if ('kind' in loaded) return await done(operatorFailure(loaded));

      const has = (fn: string) => loaded.functions.includes(fn);
      const state: { last: Output | null } = { last: null };
      let result: OperatorResult | null = null;

      if (has('initialize')) {
        const init = await driver.call('initialize', control.deadline);
        if (init.kind !== 'ok') result = callFailure(init, 'initialize', limits, state.last);
      }
      let runValue: unknown = null;
      if (!result) {
        const run = await driver.call('run', control.deadline);
        if (run.kind === 'ok') runValue = run.value;
        else result = callFailure(run, 'run', limits, state.last);
      }
      if (!result && !has('check_completion')) result = { status: 'success', output: isRecord(runValue) ? runValue : { status: 'success' } };
      if (!result) result = await pollCompletion(request, control, driver, state);

      // A stopped run (the service is stopping) starts nothing more, not even its finish hook.
      if (has('finish') && run.stopped === null) {
        let finish: CallResult | null = null;
        if (proc.alive) {
          finish = await driver.finish(Date.now() + this.finishTimeoutMs);
        } else {
          const target = await finishProcess({ pool: this.pool, invoke: this.invoke, finishTimeoutMs: this.finishTimeoutMs }, codeblock, limits, log, helpers);
          if (target) {
            active = target;
            finish = await this.invoke(target, { op: 'call', fn: 'finish', args }, Date.now() + this.finishTimeoutMs, null);
          }
        }
        if (finish && finish.kind !== 'ok') log.note(`finish did not complete: ${describeCall(finish, 'finish', this.finishTimeoutMs)}`);
      }
      return await done(result);
    } catch (error) {
      const message = `runner error: ${error instanceof Error ? error.message : String(error)}`;
      return await done({ status: 'error', output: { error: message }, message });
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
    return await this.runCall(request, [request.connection, request.actionVariables, request.context], 'action', request.context);
  }

  /** A chat's AI module: `run(...args)` as an action runs, in a fresh process (ModuleRunRequest). */
  async runModule(request: ModuleRunRequest): Promise<ActionOutcome> {
    return await this.runCall({ ...request, reuse: false }, request.args, 'module');
  }

  /**
   * The codeblock's syntax, checked by its interpreter in a run's sandbox (identity, cgroup,
   * bubblewrap) as an install step would run, without loading the code (syntaxCheck.ts).
   */
  async checkSyntax(codeblock: CodeBlock, limits: RunLimits): Promise<SyntaxCheck> {
    const checked = checkCodeblock(codeblock);
    if (typeof checked === 'string') return { checked: true, ok: false, message: checked, line: null };
    const unavailable = this.unavailable(checked.language);
    const executable = this.executables[checked.language];
    if (unavailable || !executable) return { checked: false, reason: unavailable ?? `no ${checked.language} executable` };
    const control = new RunControl(Date.now() + limits.timeoutMs);
    let proc: RuntimeProcess;
    try {
      proc = (await this.takeFor(checked, limits.memoryMb, {})).proc;
    } catch (error) {
      control.stop();
      return { checked: false, reason: `runner error: ${error instanceof Error ? error.message : String(error)}` };
    }
    try {
      const waited = await this.identityFor(proc, limits, control);
      if (waited) return { checked: false, reason: waited.kind === 'cancelled' ? 'cancelled' : waited.message };
      return await syntaxCheck({ invoke: this.invoke }, proc, checked, executable, limits, control);
    } catch (error) {
      return { checked: false, reason: `runner error: ${error instanceof Error ? error.message : String(error)}` };
    } finally {
      control.stop();
      proc.endRun();
      this.pool.release(proc, false);
    }
  }

  private async runCall(
    request: Omit<ActionRunRequest, 'connection' | 'actionVariables' | 'context'>,
    args: unknown[],
    kind: 'action' | 'module',
    context: Record<string, unknown> = {},
  ): Promise<ActionOutcome> {
    let active: RuntimeProcess | null = null;
    const { limits } = request;
    const log = this.runLog(limits, request.output, () => active?.kill('output', outputExceeded(limits)));
    const run = this.begin(kind, context);
    const done = async (result: ActionResult): Promise<ActionOutcome> => {
      this.runs.delete(run);
      await log.settle();
      log.end();
      const stopped: ActionResult | null = run.stopped === null || result.ok ? null : { ok: false, kind: 'error', message: run.stopped };
      const named = stopped ?? (!result.ok && result.kind === 'error' ? { ...result, message: this.namingLimits(result.message) } : result);
      return { ...named, logs: log.text(), logsTruncated: log.truncated };
    };

    const checked = checkCodeblock(request.codeblock);
    if (typeof checked === 'string') return await done({ ok: false, kind: 'invalid', message: checked });
    const codeblock = checked;
    const unavailable = this.unavailable(codeblock.language);
    if (unavailable) return await done({ ok: false, kind: 'error', message: unavailable });

    const control = new RunControl(Date.now() + limits.timeoutMs);
    let proc: RuntimeProcess;
    try {
      const taken = await this.takeFor(codeblock, limits.memoryMb, request);
      proc = taken.proc;
      this.attach(run, proc);
      request = { ...request, reuse: taken.reuse };
    } catch (error) {
      return await done({ ok: false, kind: 'error', message: `runner error: ${error instanceof Error ? error.message : String(error)}` });
    }
    active = proc;
    try {
      const fail = (failure: Failure): Promise<ActionOutcome> => {
        const reported = failure.kind === 'cancelled' ? { kind: 'error' as const, message: 'cancelled' } : failure;
        return done({ ok: false, kind: reported.kind, message: reported.message });
      };
      const waited = await this.identityFor(proc, limits, control);
      if (waited) return await fail(waited);
      const started = await startRun({ oneShot: this.oneShot, invoke: this.invoke }, proc, codeblock, request.bashblock, limits, control, log);
      if ('kind' in started) return await fail(started);
      const driver = this.driver(proc, started, codeblock.code, 'action', args, request, control);
      const loaded = loadOutcome(await driver.load(), limits);
      if ('kind' in loaded) return await fail(loaded);
      const run = await driver.call('run', control.deadline);
      if (run.kind === 'ok') return await done({ ok: true, result: run.value ?? null });
      return await done({ ok: false, kind: run.kind === 'timeout' ? 'timeout' : 'error', message: describeCall(run, 'run', limits.timeoutMs) });
    } catch (error) {
      return await done({ ok: false, kind: 'error', message: `runner error: ${error instanceof Error ? error.message : String(error)}` });
    } finally {
      control.stop();
      proc.endRun();
      this.pool.release(proc, request.reuse === true);
    }
  }

  /**
   * The run's output: capped in memory for the outcome (limits.maxOutputBytes, past which the code
   * is stopped), and, for a request with a sink, handed on line by line as it comes (RunOutput).
   */
  private runLog(limits: RunLimits, sink: RunOutputSink | undefined, onOverflow: () => void): CappedLog {
    return new CappedLog(limits.maxOutputBytes, onOverflow, sink ? new RunOutput(sink, this.outputLimits) : null);
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
   * A run's process still in line for its identity (every identity of the range held by a live
   * process: RunIdentities) is waited for, within the run's time limit, like a worker slot; it
   * starts once an identity is released to it (its chown and install step need it). Null once it
   * has one; otherwise the failure, the process killed (never reused).
   */
  private async identityFor(proc: RuntimeProcess, limits: RunLimits, control: RunControl): Promise<Failure | null> {
    const arrival = this.starter.identityArrival(proc);
    if (!arrival) return null;
    const outcome = await control.race(arrival);
    if (outcome === true) return null;
    const count = this.starter.identities?.range.count ?? 0;
    const failure: Failure =
      outcome === 'cancelled'
        ? { kind: 'cancelled' }
        : outcome === 'deadline'
          ? { kind: 'timeout', message: `time limit of ${limits.timeoutMs} ms exceeded while waiting for a free run identity: all ${count} (WORKER_RUN_AS_COUNT) were held by live run processes` }
          : { kind: 'error', message: 'the run process ended while waiting for a free run identity' };
    proc.kill('killed');
    return failure;
  }

  /** Why no run can start now (closed runner, missing interpreter), or null. */
  private unavailable(language: Language): string | null {
    if (this.closed) return 'the code runner is closed';
    if (this.stopMessage !== null) return this.stopMessage;
    if (this.disabled) return this.disabled;
    const problem = this.problems[language];
    if (problem) return problem;
    if (!this.executables[language]) return `no ${language === 'python' ? 'python3' : 'node'} executable on this worker`;
    return null;
  }

  /** One request to a run's process within the runner's interruptGraceMs (invokeRequest.ts). */
  private readonly invoke: Invoke = (proc, message, deadline, control) => invokeRequest(proc, message, deadline, control, this.interruptGraceMs);
}
