import { spawn } from 'node:child_process';
import { chown, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
import { ForkServer } from './ForkServer.ts';
import { SpawnedProcess, type ProcessEvents, type ProcessHandle } from './processHandle.ts';
import { ProcessDied, RuntimeProcess, runtimeArgs, type WireError, type WireRequest } from './RuntimeProcess.ts';
import { killGroup, makeRunDir, makeRunDirAsync, resolvePython, scrubbedEnv, type RunAs } from './sandbox.ts';
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
  /** Runs served by one process in reuse mode before it is replaced. Default 100. */
  maxRunsPerProcess?: number;
  /** Idle reuse processes kept per (language, memoryMb): the reuse runs expected at once. Default max(poolSize, 1). */
  maxIdleReusable?: number;
  /**
   * Run user code (and bashblocks) as this unprivileged user. Without it, user code has the
   * service's uid: the scrubbed environment hides the secrets from its env, but same-uid code can
   * still read /proc/<service pid>/environ and the service's files. Needs a service able to setuid.
   */
  runAs?: RunAs;
  /**
   * Python processes are forked from a pre-initialised interpreter (ForkServer.ts: ~1-2 ms instead
   * of ~47 ms of CPU per process; still one fresh process per run). Default true; false spawns
   * python3 for every process like node.
   */
  pythonForkServer?: boolean;
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

const LANGUAGES: readonly Language[] = ['python', 'javascript'];
const CODE_FILE: Record<Language, string> = { python: 'user_code.py', javascript: 'user_code.js' };
const RESET_TIMEOUT_MS = 2000;
const INSTALL_TAIL_BYTES = 2000;

/**
 * CodeRunner on separate OS processes (never node:vm): one python3 / node process per run (python
 * ones forked from a fork server, node ones spawned), taken from a warm pool, in a private temp
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
  private readonly forkServer: ForkServer | null;
  private closed = false;

  constructor(options: ProcessCodeRunnerOptions = {}) {
    this.executables = {
      python: options.pythonPath === undefined ? resolvePython() : options.pythonPath,
      javascript: options.nodePath ?? process.execPath,
    };
    this.finishTimeoutMs = options.finishTimeoutMs ?? 5000;
    this.interruptGraceMs = options.interruptGraceMs ?? 1000;
    this.tmpRoot = options.tmpRoot ?? tmpdir();
    this.runAs = options.runAs;
    const headroom = options.memoryHeadroomMb ?? 64;
    const python = this.executables.python;
    this.forkServer =
      python && options.pythonForkServer !== false ? new ForkServer({ executable: python, ...(this.runAs ? { runAs: this.runAs } : {}) }) : null;
    this.pool = new WarmPool({
      size: options.poolSize ?? 2,
      maxKeys: options.maxPoolKeys ?? 4,
      maxRunsPerProcess: options.maxRunsPerProcess ?? 100,
      maxIdleReusable: options.maxIdleReusable ?? Math.max(options.poolSize ?? 2, 1),
      makeDir: () => makeRunDir(this.tmpRoot, this.runAs),
      makeDirAsync: () => makeRunDirAsync(this.tmpRoot, this.runAs),
      start: (language, memoryMb, dir) =>
        new RuntimeProcess({ language, memoryMb, dir, memoryHeadroomMb: headroom, launch: (events) => this.launch(language, memoryMb, dir, events) }),
      reset: async (proc, dir) => {
        const result = await this.invoke(proc, { op: 'reset', dir }, Date.now() + RESET_TIMEOUT_MS, null);
        return result.kind === 'ok';
      },
    });
    for (const { language, memoryMb } of options.prewarm ?? []) {
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
    await this.forkServer?.close();
  }

  /** Starts one runtime process: forked by the Python fork server, or spawned. */
  private launch(language: Language, memoryMb: number, dir: string, events: ProcessEvents): ProcessHandle {
    if (language === 'python' && this.forkServer) return this.forkServer.fork({ dir, memoryMb }, events);
    const executable = this.executables[language] ?? 'python3';
    return new SpawnedProcess({ label: language, executable, args: runtimeArgs(language, memoryMb), dir, ...(this.runAs ? { runAs: this.runAs } : {}) }, events);
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
      proc = await this.pool.take(codeblock.language, limits.memoryMb, request.reuse === true);
    } catch (error) {
      control.stop();
      const message = `runner error: ${error instanceof Error ? error.message : String(error)}`;
      return done({ status: 'error', output: { error: message }, message });
    }
    active = proc;
    const helpers: RuntimeProcess[] = [];
    try {
      const prepared = await this.prepare(proc, codeblock, request.bashblock, limits, control, log);
      if ('kind' in prepared) return done(operatorFailure(prepared));

      const has = (fn: string) => prepared.functions.includes(fn);
      const args = [request.connection, request.payload, request.context];
      const call = (fn: string, deadline = control.deadline) => this.invoke(proc, { op: 'call', fn, args }, deadline, control);
      const state: { last: Output | null } = { last: null };
      let result: OperatorResult | null = null;

      if (has('initialize')) {
        const init = await call('initialize');
        if (init.kind !== 'ok') result = this.callFailure(init, 'initialize', limits, state.last);
      }
      let runValue: unknown = null;
      if (!result) {
        const run = await call('run');
        if (run.kind === 'ok') runValue = run.value;
        else result = this.callFailure(run, 'run', limits, state.last);
      }
      if (!result && !has('check_completion')) result = { status: 'success', output: isRecord(runValue) ? runValue : { status: 'success' } };
      if (!result) result = await this.poll(request, control, call, state);

      if (has('finish')) {
        const target = proc.alive ? proc : await this.finishProcess(codeblock, proc.dir, prepared.file, limits, log, helpers);
        if (target) {
          active = target;
          const finish = await this.invoke(target, { op: 'call', fn: 'finish', args }, Date.now() + this.finishTimeoutMs, null);
          if (finish.kind !== 'ok') log.note(`finish did not complete: ${describeCall(finish, 'finish', this.finishTimeoutMs)}`);
        }
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
      proc = await this.pool.take(codeblock.language, limits.memoryMb, request.reuse === true);
    } catch (error) {
      return done({ ok: false, kind: 'error', message: `runner error: ${error instanceof Error ? error.message : String(error)}` });
    }
    active = proc;
    try {
      const prepared = await this.prepare(proc, codeblock, request.bashblock, limits, control, log);
      if ('kind' in prepared) {
        const failure = prepared.kind === 'cancelled' ? { kind: 'error' as const, message: 'cancelled' } : prepared;
        return done({ ok: false, kind: failure.kind, message: failure.message });
      }
      const args = [request.connection, request.actionVariables, request.context];
      const run = await this.invoke(proc, { op: 'call', fn: 'run', args }, control.deadline, control);
      if (run.kind === 'ok') return done({ ok: true, result: run.value ?? null });
      return done({ ok: false, kind: run.kind === 'timeout' ? 'timeout' : 'error', message: describeCall(run, 'run', limits.timeoutMs) });
    } catch (error) {
      return done({ ok: false, kind: 'error', message: `runner error: ${error instanceof Error ? error.message : String(error)}` });
    } finally {
      proc.endRun();
      this.pool.release(proc, request.reuse === true);
    }
  }

  /** Why no run can start now (closed runner, missing interpreter), or null. */
  private unavailable(language: Language): string | null {
    if (this.closed) return 'the code runner is closed';
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

  /** Interpreter ready, code written, install step run, module loaded with a `run` function. */
  private async prepare(
    proc: RuntimeProcess,
    codeblock: CodeBlock,
    bashblock: { code: string } | null | undefined,
    limits: RunLimits,
    control: RunControl,
    log: CappedLog,
  ): Promise<{ functions: string[]; file: string } | Failure> {
    const file = join(proc.dir, CODE_FILE[codeblock.language]);
    await writeFile(file, codeblock.code, { mode: 0o600 });
    if (this.runAs) await chown(file, this.runAs.uid, this.runAs.gid);

    const install = typeof bashblock?.code === 'string' && bashblock.code.trim() !== '' ? bashblock.code : null;
    if (install !== null) {
      const failed = await runInstall(install, proc.dir, limits, control, log, this.runAs);
      if (failed) return failed;
    }

    const started = await control.race(proc.ready.then(
      () => null,
      (error: unknown) => (error instanceof ProcessDied ? error.message : String(error)),
    ));
    if (started === 'deadline') return { kind: 'timeout', message: `time limit of ${limits.timeoutMs} ms exceeded while starting the runtime` };
    if (started === 'cancelled') return { kind: 'cancelled' };
    if (started !== null) return { kind: 'error', message: started };

    proc.beginRun(log, limits.maxOutputBytes);
    const loaded = await this.invoke(proc, { op: 'load', file, dir: proc.dir }, control.deadline, control);
    switch (loaded.kind) {
      case 'ok': {
        const functions = loaded.functions ?? [];
        if (!functions.includes('run')) return { kind: 'invalid', message: 'invalid code: no run function is defined' };
        return { functions, file };
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

  /** check_completion every pollIntervalMs until success/failed, the completion timeout or the time limit. */
  private async poll(
    request: OperatorRunRequest,
    control: RunControl,
    call: (fn: string, deadline?: number) => Promise<CallResult>,
    state: { last: Output | null },
  ): Promise<OperatorResult> {
    const completionDeadline = Date.now() + request.checkCompletionTimeoutMs;
    const completionTimeout = (): OperatorResult => ({
      status: 'timeout',
      output: state.last ?? {},
      message: `check_completion did not report success or failed within ${request.checkCompletionTimeoutMs} ms`,
    });
    for (;;) {
      const checked = await call('check_completion', Math.min(control.deadline, completionDeadline));
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
      if (Date.now() >= completionDeadline) return completionTimeout();
      const waited = await control.sleepUntil(Math.min(Date.now() + request.pollIntervalMs, completionDeadline));
      if (waited === 'cancelled') return { status: 'cancelled', output: state.last };
      if (waited === 'deadline') return hardTimeout(request.limits, 'check_completion polling', state.last);
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
    const control = new RunControl(deadline);
    const started = await control.race(helper.ready.then(() => true, () => false));
    if (started !== true) {
      log.note('finish not called: no runtime process could be started');
      return null;
    }
    const ownDir = helper.dir;
    const moved = await this.invoke(helper, { op: 'reset', dir: runDir }, deadline, null);
    if (moved.kind !== 'ok') {
      log.note(`finish not called: ${describeCall(moved, 'reset', this.finishTimeoutMs)}`);
      return null;
    }
    helper.dir = runDir;
    this.pool.discardDir(ownDir);
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
    const first = await (control ?? new RunControl(deadline)).race(settled, deadline);
    if (first !== 'deadline' && first !== 'cancelled') return first;
    proc.interrupt(id);
    const grace = new RunControl(Date.now() + this.interruptGraceMs);
    const after = await grace.race(settled);
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
  }

  /** The first of: `work`, the deadline, cancellation. */
  async race<T>(work: Promise<T>, deadline = this.deadline): Promise<T | 'deadline' | 'cancelled'> {
    let timer: NodeJS.Timeout | undefined;
    const expiry = new Promise<'deadline'>((resolve) => {
      timer = setTimeout(() => resolve('deadline'), Math.max(0, deadline - Date.now()));
    });
    try {
      return await Promise.race([work, expiry, this.cancelledSignal]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Waits until `at` (capped by the deadline): 'slept', or what interrupted the wait. */
  async sleepUntil(at: number): Promise<'slept' | 'deadline' | 'cancelled'> {
    if (this.cancelled) return 'cancelled';
    const wake = new Promise<'slept'>((resolve) => setTimeout(() => resolve('slept'), Math.max(0, Math.min(at, this.deadline) - Date.now())));
    const result = await this.race(wake);
    return result === 'slept' && Date.now() >= this.deadline ? 'deadline' : result;
  }
}

/** bashblock: `bash -c` in the run directory, scrubbed env, within the run's time limit. */
async function runInstall(code: string, dir: string, limits: RunLimits, control: RunControl, log: CappedLog, runAs: RunAs | undefined): Promise<Failure | null> {
  const child = spawn('bash', ['-c', code], {
    cwd: dir,
    env: scrubbedEnv(dir),
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}),
  });
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
