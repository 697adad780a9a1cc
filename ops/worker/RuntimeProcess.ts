import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Language, RunStep } from '../../shared/ports/CodeRunner.ts';
import { BoundedLineReader, TailBuffer, type CappedLog } from './boundedOutput.ts';
import type { ProcessEvents, ProcessHandle, SandboxLimitHit } from './processHandle.ts';
import { ResidentReader, type RunAs } from './sandbox.ts';

/** Directory of runtime.py / runtime.cjs (and the Python fork server). */
export const RUNTIME_DIR = fileURLToPath(new URL('./runtime/', import.meta.url));
/** Protocol line cap outside runs (the ready message and pool housekeeping). */
const IDLE_LINE_BYTES = 64 * 1024;
const MB = 1024 * 1024;
const WATCHDOG_MS = 25;

export interface WireError {
  type: string;
  message: string;
  traceback: string;
  invalid?: boolean;
}

export type WireResponse = { id: number; ok: true; value?: unknown; functions?: string[] } | { id: number; ok: false; error: WireError };

export type WireRequest =
  | { op: 'load'; file: string; dir: string }
  | { op: 'call'; fn: string; args: unknown[] }
  | { op: 'reset'; dir: string }
  | { op: 'recycle'; next: string }
  /**
   * Writes the code file (as the run's uid, in the run's own directory: no privileged process ever
   * writes into a place a run could have touched), then runs the install step (`bash -c script`)
   * there when there is one; answers `{ok: true}` or `{ok: false, code, signal, tail}` (the last
   * bytes of its stderr).
   */
  | { op: 'install'; file: string; code: string; script: string | null };

/** A whole run in one request (runtime.py's docstring): its steps come back as ExecEvents. */
export interface ExecRequest {
  op: 'exec';
  plan: 'operator' | 'action';
  file: string;
  /** Written to `file` by the process itself; absent when the file is already there (install step). */
  code?: string;
  args: unknown[];
  pollIntervalMs: number;
  checkCompletionTimeoutMs: number;
  /** A fresh process whose exec wrote the code: it deletes what the run left just before its last line. */
  clear?: true;
}

/** The steps of an exec, so far as the runner reads them. */
export type ExecStep = 'load' | 'initialize' | 'run' | 'check_completion' | 'finish';

/** One line of an exec. `next: 'finish'`: finish is called next; `done`: the exec's last line. */
export type ExecEvent = { id: number; next?: 'finish'; done?: true } & (
  | { fn: ExecStep; ok: true; value?: unknown; functions?: string[] }
  | { fn: ExecStep; ok: false; error: WireError }
  | { completion: 'timeout' }
  | { interrupted: ExecStep | 'sleep' }
);

/** Why a runtime process ended before answering. */
export type DeathReason = 'killed' | 'output' | 'protocol' | 'memory' | 'exited' | 'spawn' | 'lost' | 'limit';

export class ProcessDied extends Error {
  constructor(
    readonly reason: DeathReason,
    message: string,
  ) {
    super(message);
    this.name = 'ProcessDied';
  }
}

export interface RuntimeProcessOptions {
  language: Language;
  memoryMb: number;
  /** Working directory, HOME and TMPDIR of the process. */
  dir: string;
  /** RSS growth allowed on top of memoryMb before the watchdog kills the process. */
  memoryHeadroomMb: number;
  /** The process makes `dir` itself (through the fork server): it exists once the process is ready. */
  makesOwnDir?: boolean;
  /** In a sandbox of its own: its directory is in its own tmpfs, never on the host. */
  inSandbox?: boolean;
  /** The identity the process (and its install step) runs as; the service's when absent. */
  runAs?: RunAs;
  /**
   * Starts the OS process (spawned, or forked by the fork server: Python, or node exec'd in the
   * forked child) and reports its events.
   * Must not report synchronously.
   */
  launch(events: ProcessEvents): ProcessHandle;
}

/** Interpreter arguments of a runtime process started from its executable: node (spawned or exec'd by the fork server), python without the fork server. */
export function runtimeArgs(language: Language, memoryMb: number): string[] {
  return language === 'python'
    ? ['-I', '-u', '-B', `${RUNTIME_DIR}runtime.py`, String(memoryMb)]
    : [`--max-old-space-size=${memoryMb}`, `${RUNTIME_DIR}runtime.cjs`, String(memoryMb)];
}

interface Waiter {
  resolve(response: WireResponse): void;
  reject(error: ProcessDied): void;
}

/**
 * The lines of one exec, in order. `available()` waits without taking a line, so that a reader
 * racing it against a deadline loses no line when the deadline wins.
 */
export class ExecEvents {
  private readonly queue: ExecEvent[] = [];
  /** An operator's exec calls initialize (when defined) after load; an action's only run. */
  constructor(readonly plan: ExecRequest['plan'] = 'operator') {}

  private death: ProcessDied | null = null;
  private wake: (() => void) | null = null;
  private signal: Promise<void> | null = null;

  push(event: ExecEvent): void {
    this.queue.push(event);
    this.notify();
  }

  fail(death: ProcessDied): void {
    this.death ??= death;
    this.notify();
  }

  /** Resolves when a line can be taken (or the process ended: take() then throws). */
  available(): Promise<void> {
    if (this.queue.length > 0 || this.death) return Promise.resolve();
    this.signal ??= new Promise<void>((resolve) => (this.wake = resolve));
    return this.signal;
  }

  /** The next line, null if none arrived yet; ProcessDied when the process ended before sending it. */
  take(): ExecEvent | null {
    const event = this.queue.shift();
    if (event) return event;
    if (this.death) throw this.death;
    return null;
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = null;
    this.signal = null;
    wake?.();
  }
}

/**
 * One interpreter running runtime.py / runtime.cjs in its own process group, speaking JSON lines
 * (on fd 3). stdout/stderr go to the current run's capped log (and a small tail for diagnostics).
 * How the process was started (spawned or forked) is the ProcessHandle's business; the protocol,
 * the memory watchdog, interrupts, kills and the meaning of an exit are the same for both.
 */
export class RuntimeProcess {
  readonly language: Language;
  readonly memoryMb: number;
  /** The process's own private directory, made for it and removed with it; reuse runs happen inside. */
  readonly home: string;
  /** The current run's directory: cwd, HOME and TMPDIR of the process (home, then home/run-<n> after each reuse reset). */
  dir: string;
  /** `home` is made by the process itself: it exists once the process is ready. */
  readonly makesOwnDir: boolean;
  readonly inSandbox: boolean;
  /** Set later (once) for a process that waited in line for its identity (ProcessStarter, IdentityHandle). */
  runAs: RunAs | undefined;
  /** Interrupted, killed or otherwise suspect: never handed to another run. */
  tainted = false;
  runs = 0;
  readonly ready: Promise<void>;
  readonly exited: Promise<void>;
  private readonly handle: ProcessHandle;
  private readonly reader: BoundedLineReader;
  private readonly waiting = new Map<number, Waiter>();
  private readonly streams = new Map<number, ExecEvents>();
  /** Reuse: the reset the process does by itself after its current exec (asked with `next`), until the pool takes it. */
  private selfReset: { dir: string; done: Promise<boolean> } | null = null;
  /** The exec whose reset line is awaited, until it comes (or the process ends). */
  private resetLine: { id: number; settle(ok: boolean): void } | null = null;
  private generation = 0;
  private readyNow = false;
  private readonly tail = new TailBuffer(4096);
  private readonly headroomMb: number;
  private nextId = 1;
  private death: ProcessDied | null = null;
  private killReason: DeathReason | null = null;
  private killMessage: string | null = null;
  private log: CappedLog | null = null;
  private watchdog: NodeJS.Timeout | null = null;
  private resident: ResidentReader | null = null;
  /** Resident set size (bytes) at the start of the first run: what a reuse process's growth is measured from. */
  private firstResident: number | null = null;
  private settleReady: { resolve(): void; reject(error: ProcessDied): void } | null = null;
  private settleExited: () => void = () => {};
  private exitedOnce = false;
  /** The runtime said ready: an exit before that is a start-up failure, not user code ending it. */
  private started = false;

  constructor(options: RuntimeProcessOptions) {
    this.language = options.language;
    this.memoryMb = options.memoryMb;
    this.home = options.dir;
    this.makesOwnDir = options.makesOwnDir === true;
    this.inSandbox = options.inSandbox === true;
    this.runAs = options.runAs;
    this.dir = options.dir;
    this.headroomMb = options.memoryHeadroomMb;
    this.ready = new Promise<void>((resolve, reject) => {
      this.settleReady = { resolve, reject };
    });
    this.ready.catch(() => {});
    this.exited = new Promise<void>((resolve) => {
      this.settleExited = resolve;
    });
    this.reader = new BoundedLineReader(
      IDLE_LINE_BYTES,
      (line) => this.onLine(line),
      (bytes) => this.kill('protocol', `a protocol message exceeded ${this.reader.maxLineBytes} bytes (${bytes}+ bytes)`),
    );
    this.handle = options.launch({
      data: (chunk) => this.reader.push(chunk),
      output: (chunk, stream) => {
        this.tail.append(this.log ? this.log.append('code', chunk, stream) : chunk);
      },
      // Killed at its cgroup's limit (the whole tree's memory): as the watchdog's kill would be reported.
      exit: (code, signal, memory, limit) => {
        // Killed by its fork server at a limit of its run sandbox (processes, disk, shared memory).
        if (limit && !this.killReason) this.limitHit = limitMessage(limit);
        this.finalize(memory === true && !this.killReason ? new ProcessDied('memory', this.memoryMessage()) : this.describeExit(code, signal));
      },
      failed: (reason, message) => this.finalize(this.killReason ? this.describeKill() : new ProcessDied(reason, message)),
    });
    // A starting or busy process keeps the parent alive; an idle pooled one must not.
    void this.ready.then(() => this.setBusy(this.busy), () => {});
  }

  private busy = false;

  /** Busy (taken for a run) or idle: only busy and starting processes hold the parent's event loop. */
  setBusy(busy: boolean): void {
    this.busy = busy;
    this.handle.setRef(busy);
  }

  /** The cgroup of the process's tree, when it has one (ProcessHandle.cgroup). */
  get cgroup(): string | undefined {
    return this.handle.cgroup;
  }

  get pid(): number | undefined {
    return this.handle.pid;
  }

  get alive(): boolean {
    return this.death === null && this.killReason === null;
  }

  /** The runtime said ready (a run need not wait for `ready`). */
  get isReady(): boolean {
    return this.readyNow;
  }

  /** A fresh directory name for the next reuse run, inside the own one (the process creates it). */
  nextRunDir(): string {
    this.generation += 1;
    return join(this.home, `run-${this.generation}`);
  }

  /** Sends one request; the answer, or ProcessDied when the process ends first. */
  request(message: WireRequest): { id: number; response: Promise<WireResponse> } {
    const id = this.nextId++;
    const response = new Promise<WireResponse>((resolve, reject) => {
      if (this.death) return reject(this.death);
      this.waiting.set(id, { resolve, reject });
      // The steps protocol: what the process does from now on is this request; a load starts the
      // run's output marks.
      const mark = message.op === 'load' || message.op === 'install' ? this.log?.markToken : undefined;
      if (message.op === 'load') this.log?.stepTo('load');
      else if (message.op === 'install') this.log?.stepTo('install');
      else if (message.op === 'call' && isRunStep(message.fn)) this.log?.stepTo(message.fn);
      this.handle.write(`${JSON.stringify(mark === undefined ? { id, ...message } : { id, ...message, mark })}\n`);
    });
    return { id, response };
  }

  /**
   * Sends a whole run (one write); its lines come through the returned ExecEvents. With `recycle`,
   * the process resets itself into a new run directory after the last line: recycled() tells
   * when that is done, without a request.
   */
  exec(message: ExecRequest, recycle: boolean): { id: number; events: ExecEvents } {
    const id = this.nextId++;
    const events = new ExecEvents(message.plan);
    if (this.death) {
      events.fail(this.death);
      return { id, events };
    }
    this.streams.set(id, events);
    let next: string | undefined;
    if (recycle) {
      next = this.nextRunDir();
      let settle: (ok: boolean) => void = () => {};
      const done = new Promise<boolean>((resolve) => (settle = resolve));
      this.selfReset = { dir: next, done };
      this.resetLine = { id, settle };
    }
    this.log?.stepTo('load');
    const mark = this.log?.markToken;
    const sent = mark === undefined ? message : { ...message, mark };
    this.handle.write(`${JSON.stringify(next === undefined ? { id, ...sent } : { id, ...sent, next })}\n`);
    return { id, events };
  }

  /**
   * The reset the last exec asked for: the directory it moves to and whether that worked (false
   * when the process ended first); null when none was asked.
   */
  takeSelfReset(): { dir: string; done: Promise<boolean> } | null {
    const pending = this.selfReset;
    this.selfReset = null;
    return pending;
  }

  /**
   * Asks an exec to give up (time limit, cancellation, finish budget) after the runner read `seen`
   * of its lines: an abandon line carrying that count, then SIGINT for Python, whose handler reads
   * it (an interrupt that crossed the line announcing finish must not end finish).
   */
  interruptExec(id: number, seen: number): void {
    this.tainted = true;
    if (!this.alive) return;
    this.handle.write(`${JSON.stringify({ op: 'abandon', id, seen })}\n`);
    if (this.language === 'python') this.handle.signal('SIGINT');
  }

  /**
   * Asks the process to give up call `id` (time limit or cancellation): SIGINT for Python (raises
   * in the user code), an `abandon` message for JavaScript (answers at once if the event loop is
   * free). A busy loop answers neither; the caller kills after a grace period.
   */
  interrupt(id: number): void {
    this.tainted = true;
    if (!this.alive) return;
    if (this.language === 'python') this.handle.signal('SIGINT');
    else this.handle.write(`${JSON.stringify({ op: 'abandon', id })}\n`);
  }

  /** Routes output to `log`, caps protocol messages and watches memory until endRun. */
  beginRun(log: CappedLog, maxMessageBytes: number): void {
    this.runs += 1;
    this.log = log;
    this.reader.maxLineBytes = maxMessageBytes;
    const pid = this.handle.pid;
    if (pid === undefined) return;
    const resident = (this.resident ??= new ResidentReader(pid));
    const baseline = resident.read() ?? 0;
    this.firstResident ??= baseline;
    const limit = baseline + (this.memoryMb + this.headroomMb) * MB;
    this.watchdog = setInterval(() => {
      const rss = resident.read();
      if (rss !== undefined && rss > limit) this.kill('memory', this.memoryMessage());
    }, WATCHDOG_MS);
    this.watchdog.unref();
  }

  /**
   * How far the resident set grew since the start of the first run, in MiB (0 when unknown). A
   * reuse process keeps what its runs leave behind, warm module state included.
   */
  residentGrowthMb(): number {
    const now = this.resident?.read();
    if (now === undefined || this.firstResident === null) return 0;
    return Math.max(0, now - this.firstResident) / MB;
  }

  endRun(): void {
    this.log = null;
    this.reader.maxLineBytes = IDLE_LINE_BYTES;
    if (this.watchdog) clearInterval(this.watchdog);
    this.watchdog = null;
  }

  /** SIGKILL to the process group; pending requests fail with `reason`. */
  kill(reason: DeathReason, message?: string): void {
    this.tainted = true;
    if (this.death) return;
    if (this.killReason === null) {
      this.killReason = reason;
      if (message) this.killMessage = message;
    }
    this.handle.kill();
  }

  /** The run hit a limit of its sandbox (processes, disk, shared memory) and was stopped there. */
  private limitHit: string | null = null;

  private memoryMessage(): string {
    return `memory limit of ${this.memoryMb} MB exceeded`;
  }

  private onLine(line: string): void {
    let message: { op?: string; id?: number };
    try {
      message = JSON.parse(line) as { op?: string; id?: number };
    } catch {
      this.kill('protocol', 'unreadable protocol message from the runtime');
      return;
    }
    if (message.op === 'ready') {
      this.started = true;
      this.readyNow = true;
      this.settleReady?.resolve();
      return;
    }
    if (typeof message.id !== 'number') return;
    if (message.op === 'reset' && this.resetLine?.id === message.id) {
      this.resetLine.settle((message as { ok?: unknown }).ok === true);
      this.resetLine = null;
      return;
    }
    const stream = this.streams.get(message.id);
    if (stream) {
      const event = message as ExecEvent;
      if (event.done) this.streams.delete(message.id);
      // As for answers (below): the output written before this line reaches the log first, under
      // the step it ended; what comes after it is the next step's.
      setImmediate(() => {
        const next = stepAfter(event, stream.plan);
        if (next) this.log?.stepTo(next);
        stream.push(event);
      });
      return;
    }
    const waiter = this.waiting.get(message.id);
    if (!waiter) return;
    this.waiting.delete(message.id);
    // Output and answers travel on different channels. The code wrote its output before the answer,
    // so that output was readable no later than the answer; it is read in this same poll phase, but
    // possibly after this line. Settling in the check phase lets it reach the run's log first.
    setImmediate(() => waiter.resolve(message as WireResponse));
  }

  private describeExit(code: number | null, signal: NodeJS.Signals | null): ProcessDied {
    const how = signal ? `signal ${signal}` : `exit code ${code}`;
    const tail = this.tail.text();
    if (this.killReason) return this.describeKill();
    if (this.limitHit) return new ProcessDied('limit', this.limitHit);
    if (/heap out of memory|Reached heap limit|Allocation failed|MemoryError/i.test(tail)) {
      return new ProcessDied('memory', this.memoryMessage());
    }
    const last = tail.trim().split('\n').slice(-3).join(' | ');
    if (!this.started) {
      return new ProcessDied('spawn', `the ${this.language} runtime ended while starting (${how})` + (last ? `; last output: ${last.slice(-500)}` : ''));
    }
    return new ProcessDied(
      'exited',
      `the ${this.language} process ended unexpectedly (${how}); operator code must not end the process (sys.exit, os._exit, process.exit)` +
        (last ? `; last output: ${last.slice(-500)}` : ''),
    );
  }

  /** The end of a process the runner killed, whatever the exit looked like. */
  private describeKill(): ProcessDied {
    const reason = this.killReason ?? 'killed';
    if (reason === 'killed') return new ProcessDied('killed', `the ${this.language} process was killed by the runner`);
    return new ProcessDied(reason, this.killMessage ?? `the ${this.language} process was stopped (${reason})`);
  }

  private finalize(death: ProcessDied): void {
    if (this.exitedOnce) return;
    this.exitedOnce = true;
    this.death = death;
    if (this.watchdog) clearInterval(this.watchdog);
    this.watchdog = null;
    this.resident?.close();
    this.reader.stop();
    this.settleReady?.reject(death);
    for (const waiter of this.waiting.values()) waiter.reject(death);
    this.waiting.clear();
    // After the lines already read (delivered in the check phase, like them).
    const streams = [...this.streams.values()];
    this.streams.clear();
    setImmediate(() => {
      for (const stream of streams) stream.fail(death);
    });
    this.resetLine?.settle(false);
    this.resetLine = null;
    this.handle.close();
    this.settleExited();
  }
}

const RUN_STEPS: ReadonlySet<string> = new Set<RunStep>(['install', 'load', 'initialize', 'run', 'check_completion', 'finish']);

function isRunStep(name: string): name is RunStep {
  return RUN_STEPS.has(name);
}

/**
 * The step an exec is in once it sent `event` (runtime.py, Exec.run): the line after which finish
 * is called says so; a load is followed by initialize (an operator's, when defined) or run, and
 * run and every poll by the next poll. Null: no step follows (the exec's last line).
 */
export function stepAfter(event: ExecEvent, plan: ExecRequest['plan']): RunStep | null {
  if (event.next === 'finish') return 'finish';
  if (event.done || !('fn' in event)) return null;
  switch (event.fn) {
    case 'load':
      return plan === 'operator' && event.ok && event.functions?.includes('initialize') ? 'initialize' : 'run';
    case 'initialize':
      return 'run';
    case 'run':
    case 'check_completion':
      return 'check_completion';
    default:
      return null;
  }
}

/** The error a run gets for the sandbox limit it hit (naming the limit and its setting). */
function limitMessage(report: SandboxLimitHit): string {
  const value = typeof report.value === 'number' ? report.value : '?';
  const setting = typeof report.setting === 'string' && /^[A-Z_]{1,40}$/.test(report.setting) ? report.setting : 'a sandbox limit';
  switch (report.limit) {
    case 'processes':
      return `the run hit its process limit (${setting}=${value} processes) and was stopped`;
    case 'disk':
      return `the run filled its disk (${setting}=${value} MB: its directory, /tmp and /var/tmp) and was stopped`;
    case 'shared memory':
      return `the run filled its shared memory (${setting}=${value} MB: /dev/shm) and was stopped`;
    default:
      return `the run hit a limit of its sandbox (${setting}) and was stopped`;
  }
}
