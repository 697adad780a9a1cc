import { failedStart } from './ForkServer.ts';
import type { ProcessEvents, ProcessHandle } from './processHandle.ts';
import type { IdentityWait, RunIdentities } from './runIdentities.ts';
import { RuntimeProcess, type RuntimeProcessOptions } from './RuntimeProcess.ts';
import type { RunAs } from './sandbox.ts';

/** Starts the OS process as `runAs` (the fork request or spawn of ProcessStarter). */
export type LaunchAs = (runAs: RunAs, events: ProcessEvents) => ProcessHandle;

/**
 * Who holds the identities of one runner (RunIdentities), so that a process a run waits on is not
 * held up by processes that serve nobody: when every identity is held and a run waits in line, an
 * idle process (started ahead of demand, or an idle reuse process) is killed and its identity,
 * released once it is gone, goes to that run's process. Without this, a small range (one identity:
 * WORKER_RUN_AS_UID without a count) held by the warm pool of one language would keep the runs of
 * the other waiting until their time limit.
 */
export class IdentityHolders {
  private readonly handles = new Map<RuntimeProcess, IdentityHandle>();
  /** Idle holders killed for processes in line whose identities have not come back yet. */
  private reclaiming = 0;

  constructor(readonly identities: RunIdentities) {}

  /**
   * A runtime process that runs as an identity of its own: a free one now, else the next released
   * one (made now, started then). Its identity goes back once it (and all it started) is gone.
   */
  start(options: Omit<RuntimeProcessOptions, 'runAs' | 'launch'>, launch: LaunchAs): RuntimeProcess {
    const handle = new IdentityHandle(this, this.identities.take(), launch);
    const proc = new RuntimeProcess({ ...options, ...(handle.runAs ? { runAs: handle.runAs } : {}), launch: (events) => handle.attach(events) });
    handle.proc = proc;
    this.handles.set(proc, handle);
    void proc.exited.then(() => {
      this.handles.delete(proc);
      const held = handle.end();
      if (!held) return;
      if (handle.evicted) this.reclaiming -= 1;
      this.identities.release(held);
    });
    return proc;
  }

  /**
   * Resolves true once `proc` holds its identity, false if it ended in line; null when it needs
   * no wait (it has one, or runs without identities).
   */
  arrival(proc: RuntimeProcess): Promise<boolean> | null {
    const handle = this.handles.get(proc);
    return handle?.inLine ? handle.arrival : null;
  }

  /** A process was taken by a run (busy) or went back to idle; `handle` reports it (setRef). */
  busy(handle: IdentityHandle, busy: boolean): void {
    handle.busy = busy;
    if (busy) handle.hurry();
    this.reclaim();
  }

  /** One idle holder killed per process a run waits on in line (beyond those already killed for one). */
  private reclaim(): void {
    const { urgent } = this.identities.waiting;
    if (urgent <= this.reclaiming) return;
    for (const handle of this.handles.values()) {
      if (!handle.evictable) continue;
      handle.evicted = true;
      this.reclaiming += 1;
      handle.proc?.kill('killed', 'killed while idle: its run identity was needed by a run (all identities of the range were held)');
      if (urgent <= this.reclaiming) return;
    }
  }
}

/**
 * A ProcessHandle that starts its OS process once the process has an identity of its own: at once
 * when one was free, else when one is released (in line meanwhile: protocol writes are queued, a
 * kill takes it out of the line and ends the process as a failed start).
 */
export class IdentityHandle implements ProcessHandle {
  /** Set by IdentityHolders.start, right after the RuntimeProcess is made. */
  proc: RuntimeProcess | null = null;
  /** Taken by a run (not idle in a pool). */
  busy = false;
  /** Killed (idle) so that a run's process gets its identity. */
  evicted = false;
  /** Resolves when the identity arrived (true) or the process ended in line (false); null when none was awaited. */
  readonly arrival: Promise<boolean> | null = null;
  private inner: ProcessHandle | null = null;
  private events: ProcessEvents | null = null;
  private line: IdentityWait | null = null;
  private settleArrival: (arrived: boolean) => void = () => {};
  private readonly writes: string[] = [];
  private ref: boolean | null = null;

  constructor(
    private readonly holders: IdentityHolders,
    /** The identity held; null while in line. */
    private identity: RunAs | null,
    private readonly launch: LaunchAs,
  ) {
    if (identity === null) this.arrival = new Promise<boolean>((resolve) => (this.settleArrival = resolve));
  }

  /** The identity the process starts with, when it had one at once. */
  get runAs(): RunAs | null {
    return this.identity;
  }

  /** Waits in line for an identity (not started yet). */
  get inLine(): boolean {
    return this.line !== null;
  }

  /** Holds an identity and serves no run: may be killed for a run in line. */
  get evictable(): boolean {
    return this.identity !== null && !this.busy && !this.evicted;
  }

  /** RuntimeProcessOptions.launch: the OS process now, or once an identity is released to it. */
  attach(events: ProcessEvents): ProcessHandle {
    this.events = events;
    if (this.identity) this.begin(this.identity);
    else this.line = this.holders.identities.wait((identity) => this.begin(identity, true));
    return this;
  }

  hurry(): void {
    this.line?.hurry();
  }

  /** The process is gone: the identity it held, if any (out of the line otherwise). */
  end(): RunAs | null {
    this.line?.cancel();
    this.line = null;
    this.settleArrival(false);
    const held = this.identity;
    this.identity = null;
    return held;
  }

  get pid(): number | undefined {
    return this.inner?.pid;
  }

  get cgroup(): string | undefined {
    return this.inner?.cgroup;
  }

  write(text: string): void {
    if (this.inner) this.inner.write(text);
    else this.writes.push(text);
  }

  signal(name: NodeJS.Signals): void {
    this.inner?.signal(name);
  }

  kill(): void {
    if (this.inner) return this.inner.kill();
    // In line: it never started. Out of the line, and ended as a start that failed.
    this.line?.cancel();
    this.line = null;
    this.inner = failedStart(this.events ?? silent, 'ended while waiting for a free run identity');
  }

  close(): void {
    this.inner?.close();
  }

  setRef(ref: boolean): void {
    this.ref = ref;
    this.inner?.setRef(ref);
    if (ref !== this.busy) this.holders.busy(this, ref);
  }

  private begin(identity: RunAs, late = false): void {
    this.line = null;
    this.identity = identity;
    // Waited in line: the run's chown and install step read the identity from the process.
    if (late && this.proc) this.proc.runAs = identity;
    const events = this.events ?? silent;
    try {
      this.inner = this.launch(identity, events);
    } catch (error) {
      this.inner = failedStart(events, `could not start: ${(error as Error).message}`);
    }
    for (const text of this.writes.splice(0)) this.inner.write(text);
    if (this.ref !== null) this.inner.setRef(this.ref);
    this.settleArrival(true);
  }
}

const silent: ProcessEvents = { data: () => {}, output: () => {}, exit: () => {}, failed: () => {} };
