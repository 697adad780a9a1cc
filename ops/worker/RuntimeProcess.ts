import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Language } from '../../shared/ports/CodeRunner.ts';
import { BoundedLineReader, TailBuffer, type CappedLog } from './boundedOutput.ts';
import type { ProcessEvents, ProcessHandle } from './processHandle.ts';
import { residentBytes } from './sandbox.ts';

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
  | { op: 'reset'; dir: string };

/** Why a runtime process ended before answering. */
export type DeathReason = 'killed' | 'output' | 'protocol' | 'memory' | 'exited' | 'spawn' | 'lost';

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
  /**
   * Starts the OS process (spawned, or forked by the Python fork server) and reports its events.
   * Must not report synchronously.
   */
  launch(events: ProcessEvents): ProcessHandle;
}

/** Interpreter arguments of a spawned runtime process (node always; python without the fork server). */
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
 * One interpreter running runtime.py / runtime.cjs in its own process group, speaking JSON lines
 * (on fd 3). stdout/stderr go to the current run's capped log (and a small tail for diagnostics).
 * How the process was started (spawned or forked) is the ProcessHandle's business; the protocol,
 * the memory watchdog, interrupts, kills and the meaning of an exit are the same for both.
 */
export class RuntimeProcess {
  readonly language: Language;
  readonly memoryMb: number;
  dir: string;
  /** Interrupted, killed or otherwise suspect: never handed to another run. */
  tainted = false;
  runs = 0;
  readonly ready: Promise<void>;
  readonly exited: Promise<void>;
  private readonly handle: ProcessHandle;
  private readonly reader: BoundedLineReader;
  private readonly waiting = new Map<number, Waiter>();
  private readonly tail = new TailBuffer(4096);
  private readonly headroomMb: number;
  private nextId = 1;
  private death: ProcessDied | null = null;
  private killReason: DeathReason | null = null;
  private killMessage: string | null = null;
  private log: CappedLog | null = null;
  private watchdog: NodeJS.Timeout | null = null;
  private settleReady: { resolve(): void; reject(error: ProcessDied): void } | null = null;
  private settleExited: () => void = () => {};
  private exitedOnce = false;
  /** The runtime said ready: an exit before that is a start-up failure, not user code ending it. */
  private started = false;

  constructor(options: RuntimeProcessOptions) {
    this.language = options.language;
    this.memoryMb = options.memoryMb;
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
      output: (chunk) => {
        this.tail.append(chunk);
        this.log?.append('code', chunk);
      },
      exit: (code, signal) => this.finalize(this.describeExit(code, signal)),
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

  get pid(): number | undefined {
    return this.handle.pid;
  }

  get alive(): boolean {
    return this.death === null && this.killReason === null;
  }

  /** Sends one request; the answer, or ProcessDied when the process ends first. */
  request(message: WireRequest): { id: number; response: Promise<WireResponse> } {
    const id = this.nextId++;
    const response = new Promise<WireResponse>((resolve, reject) => {
      if (this.death) return reject(this.death);
      this.waiting.set(id, { resolve, reject });
      this.handle.write(`${JSON.stringify({ id, ...message })}\n`);
    });
    return { id, response };
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
    const read = (path: string) => readFileSync(path, 'utf8');
    const baseline = residentBytes(pid, read) ?? 0;
    const limit = baseline + (this.memoryMb + this.headroomMb) * MB;
    this.watchdog = setInterval(() => {
      const rss = residentBytes(pid, read);
      if (rss !== undefined && rss > limit) this.kill('memory', this.memoryMessage());
    }, WATCHDOG_MS);
    this.watchdog.unref();
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
      this.settleReady?.resolve();
      return;
    }
    if (typeof message.id !== 'number') return;
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
    this.reader.stop();
    this.settleReady?.reject(death);
    for (const waiter of this.waiting.values()) waiter.reject(death);
    this.waiting.clear();
    this.handle.close();
    this.settleExited();
  }
}
