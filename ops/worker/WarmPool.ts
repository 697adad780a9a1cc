import type { Language } from '../../shared/ports/CodeRunner.ts';
import type { RuntimeProcess } from './RuntimeProcess.ts';
import { removeRunDir } from './sandbox.ts';

const EXIT_WAIT_MS = 2000;

export interface WarmPoolOptions {
  /** Started-ahead processes kept per (language, memoryMb); 0 starts every process on demand. */
  size: number;
  /** Distinct (language, memoryMb) pools kept; the least recently used one beyond this is emptied. */
  maxKeys: number;
  /**
   * A fresh private working directory for a process: made at once for a spawned process (it
   * starts in it), only named for one started through the fork server (the child makes it).
   */
  makeDir(language: Language, memoryMb: number): string;
  /** Runs served by one process in reuse mode before it is replaced (module caches only grow; memory growth retires it earlier). */
  maxRunsPerProcess: number;
  /**
   * Idle reuse processes kept per key. As many as reuse runs go on at once: a smaller cap disposes
   * of processes that the next concurrent reuse runs then have to start again.
   */
  maxIdleReusable: number;
  start(language: Language, memoryMb: number, dir: string): RuntimeProcess;
  /**
   * Clears a used process's directory and moves it into a fresh run directory inside it (reuse; the
   * process does the file work itself); false when that failed or did not happen in time.
   */
  reset(process: RuntimeProcess): Promise<boolean>;
}

/**
 * Interpreters started ahead of demand. Node's heap limit is a start-up flag, so pools are keyed
 * by (language, memoryMb). Each process owns a fresh private working directory from the start
 * (`home`); a run uses it and it is removed with the process. Taking a process refills its pool in
 * the background. Used processes come back only for `reuse` runs, after their reset: the process
 * empties its home and moves into a new subdirectory of it, so the runner makes and removes no
 * directory per reuse run.
 *
 * A run hands its process back with release() and does not wait: the kill is immediate, removing
 * the directory (and a reuse process's reset) finishes in the background, tracked so that
 * settled() and close() can wait for it.
 */
export class WarmPool {
  private readonly fresh = new Map<string, RuntimeProcess[]>();
  private readonly used = new Map<string, RuntimeProcess[]>();
  private readonly all = new Set<RuntimeProcess>();
  /** Reuse processes being reset, per key: a reuse take waits for them rather than starting a process. */
  private readonly recycling = new Map<string, Set<Promise<void>>>();
  /** Cleanup still running in the background (disposals, resets, directory removals). */
  private readonly cleanups = new Set<Promise<void>>();
  private closed = false;

  constructor(private readonly options: WarmPoolOptions) {}

  /** Starts the pool of one key now (service start-up) instead of at its first run. */
  prewarm(language: Language, memoryMb: number): void {
    this.touch(key(language, memoryMb));
    this.refill(language, memoryMb);
  }

  /** Fills the pool of one key and resolves when its processes are ready (or failed to start). */
  async warm(language: Language, memoryMb: number): Promise<void> {
    this.prewarm(language, memoryMb);
    const list = [...(this.fresh.get(key(language, memoryMb)) ?? [])];
    await Promise.all(list.map((p) => p.ready.catch(() => {})));
  }

  /**
   * A process for one run: for reuse runs a used one if any (waiting for one still being reset,
   * which is cheaper than starting one), else a fresh warm one, else a new one.
   */
  async take(language: Language, memoryMb: number, reuse: boolean): Promise<RuntimeProcess> {
    if (this.closed) throw new Error('the code runner is closed');
    const k = key(language, memoryMb);
    this.touch(k);
    while (reuse && !this.closed) {
      const found = popAlive(this.used.get(k));
      if (found) {
        found.setBusy(true);
        return found;
      }
      const resetting = this.recycling.get(k);
      if (!resetting || resetting.size === 0) break;
      await Promise.race(resetting);
    }
    return this.takeFresh(language, memoryMb);
  }

  /** A fresh process (never used by another run), synchronously. */
  takeFresh(language: Language, memoryMb: number): RuntimeProcess {
    if (this.closed) throw new Error('the code runner is closed');
    const found = popAlive(this.fresh.get(key(language, memoryMb))) ?? this.spawn(language, memoryMb);
    found.setBusy(true);
    if (this.options.size > 0) setImmediate(() => this.refill(language, memoryMb));
    return found;
  }

  /** A process started for one run only, as `start` makes it (never pooled; release it with reuse false). */
  takeOwn(start: () => RuntimeProcess): RuntimeProcess {
    if (this.closed) throw new Error('the code runner is closed');
    const process = start();
    this.all.add(process);
    process.setBusy(true);
    return process;
  }

  /**
   * The run is over: recycle (reuse) or dispose of the process, in the background. The kill of a
   * disposed process happens before this returns; a recycled process is offered to another run
   * only once its reset has finished.
   */
  release(process: RuntimeProcess, reuse: boolean): void {
    if (!reuse) {
      this.track(this.dispose(process));
      return;
    }
    const k = key(process.language, process.memoryMb);
    const resetting = this.recycling.get(k) ?? new Set<Promise<void>>();
    this.recycling.set(k, resetting);
    const recycled: Promise<void> = this.recycle(process)
      .catch(() => this.dispose(process))
      .finally(() => resetting.delete(recycled));
    resetting.add(recycled);
    this.track(recycled);
  }

  /** Removes a directory in the background (tracked like the other cleanups). */
  private discardDir(dir: string): void {
    this.track(removeRunDir(dir));
  }

  /** Resolves when the background cleanups started so far (and those they started) are done. */
  async settled(): Promise<void> {
    while (this.cleanups.size > 0) await Promise.all([...this.cleanups]);
  }

  /** After a reuse run: keep the process for the next reuse run, in a fresh directory. */
  private async recycle(process: RuntimeProcess): Promise<void> {
    const k = key(process.language, process.memoryMb);
    const list = this.used.get(k) ?? [];
    // Worn: served its runs, or holds more than half its memory limit beyond what it started with
    // (what its runs left behind, warm module state included), which would end some later run as
    // out of memory rather than let it start in a fresh process.
    const worn = process.runs >= this.options.maxRunsPerProcess || process.residentGrowthMb() > process.memoryMb / 2;
    if (this.closed || worn || list.length >= Math.max(1, this.options.maxIdleReusable) || !process.alive || process.tainted) return this.dispose(process);
    if (!(await this.options.reset(process))) return this.dispose(process);
    if (this.closed) return this.dispose(process);
    process.setBusy(false);
    list.push(process);
    this.used.set(k, list);
  }

  /** Kills the process group and removes the working directory; optionally waits for the exit. */
  async dispose(process: RuntimeProcess, waitForExit = false): Promise<void> {
    this.all.delete(process);
    for (const list of [...this.fresh.values(), ...this.used.values()]) {
      const at = list.indexOf(process);
      if (at !== -1) list.splice(at, 1);
    }
    process.kill('killed');
    if (process.makesOwnDir) {
      // A forked process makes its directory itself: killed before it got that far, it may still
      // make it after a removal here (coderun-* left in the temp dir after close). Removed once it
      // is gone, then.
      let wait: NodeJS.Timeout | undefined;
      await Promise.race([process.exited, new Promise<void>((resolve) => (wait = setTimeout(resolve, EXIT_WAIT_MS)))]);
      clearTimeout(wait);
    }
    // A sandboxed process's directory was in its own tmpfs, gone with it: nothing on the host to remove.
    if (!process.inSandbox) await removeRunDir(process.home);
    if (waitForExit) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([process.exited, new Promise<void>((resolve) => (timer = setTimeout(resolve, EXIT_WAIT_MS)))]);
      clearTimeout(timer);
    }
  }

  /** Process ids of every process the pool started and still holds (pooled and busy). */
  pids(): number[] {
    return [...this.all].flatMap((p) => (p.pid === undefined ? [] : [p.pid]));
  }

  get size(): { fresh: number; used: number; total: number } {
    const count = (m: Map<string, RuntimeProcess[]>) => [...m.values()].reduce((n, l) => n + l.length, 0);
    return { fresh: count(this.fresh), used: count(this.used), total: this.all.size };
  }

  async close(): Promise<void> {
    this.closed = true;
    const everything = [...this.all];
    this.fresh.clear();
    this.used.clear();
    await Promise.all(everything.map((p) => this.dispose(p, true)));
    await this.settled();
  }

  private track(cleanup: Promise<void>): void {
    // A failed cleanup (a directory that would not go) must not surface as an unhandled rejection.
    const tracked: Promise<void> = cleanup.catch(() => {}).finally(() => this.cleanups.delete(tracked));
    this.cleanups.add(tracked);
  }

  private refill(language: Language, memoryMb: number): void {
    if (this.closed) return;
    const k = key(language, memoryMb);
    const list = this.fresh.get(k) ?? [];
    this.fresh.set(k, list);
    while (list.length < this.options.size) list.push(this.spawn(language, memoryMb));
  }

  private spawn(language: Language, memoryMb: number): RuntimeProcess {
    const process = this.options.start(language, memoryMb, this.options.makeDir(language, memoryMb));
    this.all.add(process);
    void process.exited.then(() => {
      // Died while pooled (or after its run): forget it and its directory.
      const k = key(language, memoryMb);
      for (const list of [this.fresh.get(k), this.used.get(k)]) {
        const at = list?.indexOf(process) ?? -1;
        if (at === -1) continue;
        list?.splice(at, 1);
        this.all.delete(process);
        if (!process.inSandbox) this.discardDir(process.home);
      }
    });
    return process;
  }

  /** Marks a key as recently used; empties the least recently used pools beyond maxKeys. */
  private touch(k: string): void {
    const list = this.fresh.get(k);
    this.fresh.delete(k);
    this.fresh.set(k, list ?? []);
    while (this.fresh.size > this.options.maxKeys) {
      const [oldest, idle] = this.fresh.entries().next().value as [string, RuntimeProcess[]];
      this.fresh.delete(oldest);
      const usedIdle = this.used.get(oldest) ?? [];
      this.used.delete(oldest);
      for (const p of [...idle, ...usedIdle]) this.track(this.dispose(p));
    }
  }
}

function key(language: Language, memoryMb: number): string {
  return `${language}:${memoryMb}`;
}

function popAlive(list: RuntimeProcess[] | undefined): RuntimeProcess | undefined {
  while (list && list.length > 0) {
    const candidate = list.shift();
    if (candidate?.alive) return candidate;
  }
  return undefined;
}
