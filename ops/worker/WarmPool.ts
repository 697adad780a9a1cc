import type { Language, ReuseScope } from '../../shared/ports/CodeRunner.ts';
import type { RuntimeProcess } from './RuntimeProcess.ts';
import { removeRunDir } from './sandbox.ts';

const EXIT_WAIT_MS = 2000;

export interface WarmPoolOptions {
  /** Started-ahead processes kept per (language, memoryMb); 0 starts every process on demand. */
  size: number;
  /** Distinct (language, memoryMb) pools of fresh processes kept; the least recently used one beyond this is emptied. */
  maxKeys: number;
  /**
   * A fresh private working directory for a process: made at once for a spawned process (it
   * starts in it), only named for one started through the fork server (the child makes it).
   */
  makeDir(language: Language, memoryMb: number): string;
  /** Runs served by one process in reuse mode before it is replaced (module caches only grow; memory growth retires it earlier). */
  maxRunsPerProcess: number;
  /**
   * Idle reuse processes kept per reuse key (scope, language, memoryMb). As many as reuse runs of
   * one scope go on at once: a smaller cap disposes of processes that the next concurrent reuse
   * runs then have to start again.
   */
  maxIdleReusable: number;
  /**
   * Idle reuse processes kept in all, whatever their keys (every user's every reuse operator may
   * have some): beyond it, the least recently used key's oldest idle process is disposed of.
   */
  maxIdleReusableTotal: number;
  start(language: Language, memoryMb: number, dir: string): RuntimeProcess;
  /**
   * Clears a used process's directory and moves it into a fresh run directory inside it (reuse; the
   * process does the file work itself); false when that failed or did not happen in time.
   */
  reset(process: RuntimeProcess): Promise<boolean>;
}

/** Which reuse key a process serves, and the scope it belongs to (ReuseScope). */
interface Owner {
  key: string;
  scope: ReuseScope;
}

/**
 * Interpreters started ahead of demand. Node's heap limit is a start-up flag, so pools of fresh
 * processes are keyed by (language, memoryMb). Each process owns a fresh private working directory
 * from the start (`home`); a run uses it and it is removed with the process. Taking a process
 * refills its pool in the background. Used processes come back only for `reuse` runs of the scope
 * that first took them (the code item and the user its runs act as, language and memory limit:
 * the reuse key), after their reset: the process empties its home and moves into a new
 * subdirectory of it, so the runner makes and removes no directory per reuse run. A retired scope's
 * processes (its user or item lost its rights) are killed, idle at once, busy after their run.
 *
 * A run hands its process back with release() and does not wait: the kill is immediate, removing
 * the directory (and a reuse process's reset) finishes in the background, tracked so that
 * settled() and close() can wait for it.
 */
export class WarmPool {
  private readonly fresh = new Map<string, RuntimeProcess[]>();
  /** Idle reuse processes per reuse key, least recently used key first; a key without one is deleted. */
  private readonly used = new Map<string, RuntimeProcess[]>();
  private readonly all = new Set<RuntimeProcess>();
  /** Every process bound to a reuse key (idle, being reset or running): never handed to another key. */
  private readonly owners = new Map<RuntimeProcess, Owner>();
  /** Bound processes whose scope was retired while they were busy: disposed of after their run. */
  private readonly retired = new Set<RuntimeProcess>();
  /** Reuse processes being reset, per reuse key: a reuse take waits for them rather than starting a process. */
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
   * A process for one run: for a reuse run (a scope) an idle one of its reuse key if any (waiting
   * for one still being reset, which is cheaper than starting one), else a fresh warm one, else a
   * new one, bound to the key from then on; without a scope a fresh one.
   */
  async take(language: Language, memoryMb: number, scope: ReuseScope | null): Promise<RuntimeProcess> {
    if (this.closed) throw new Error('the code runner is closed');
    this.touch(key(language, memoryMb));
    if (!scope) return this.takeFresh(language, memoryMb);
    const k = reuseKey(language, memoryMb, scope);
    while (!this.closed) {
      const found = this.popIdle(k);
      if (found) {
        found.setBusy(true);
        return found;
      }
      const resetting = this.recycling.get(k);
      if (!resetting || resetting.size === 0) break;
      await Promise.race(resetting);
    }
    const process = this.takeFresh(language, memoryMb);
    this.owners.set(process, { key: k, scope });
    return process;
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
    const owner = this.owners.get(process);
    if (!reuse || !owner) {
      this.track(this.dispose(process));
      return;
    }
    const resetting = this.recycling.get(owner.key) ?? new Set<Promise<void>>();
    this.recycling.set(owner.key, resetting);
    const recycled: Promise<void> = this.recycle(process, owner.key)
      .catch(() => this.dispose(process))
      .finally(() => {
        resetting.delete(recycled);
        if (resetting.size === 0 && this.recycling.get(owner.key) === resetting) this.recycling.delete(owner.key);
      });
    resetting.add(recycled);
    this.track(recycled);
  }

  /**
   * Ends the reuse processes of the scopes `match` accepts: idle ones now (resolves when they are
   * gone), busy ones (running or being reset) when they come back, instead of being kept.
   */
  async retire(match: (scope: ReuseScope) => boolean): Promise<void> {
    const killed: Array<Promise<void>> = [];
    for (const [process, owner] of this.owners) {
      if (!match(owner.scope)) continue;
      if (this.used.get(owner.key)?.includes(process)) {
        const disposal = this.dispose(process, true);
        this.track(disposal);
        killed.push(disposal.catch(() => {}));
      } else {
        this.retired.add(process);
      }
    }
    await Promise.all(killed);
  }

  /** The scopes that hold processes now (idle, being reset or busy), each once. */
  scopes(): ReuseScope[] {
    const seen = new Map<string, ReuseScope>();
    for (const { scope } of this.owners.values()) seen.set(scopeKey(scope), scope);
    return [...seen.values()];
  }

  /** Removes a directory in the background (tracked like the other cleanups). */
  private discardDir(dir: string): void {
    this.track(removeRunDir(dir));
  }

  /** Resolves when the background cleanups started so far (and those they started) are done. */
  async settled(): Promise<void> {
    while (this.cleanups.size > 0) await Promise.all([...this.cleanups]);
  }

  /** After a reuse run: keep the process for the next reuse run of its key, in a fresh directory. */
  private async recycle(process: RuntimeProcess, k: string): Promise<void> {
    // Worn: served its runs, or holds more than half its memory limit beyond what it started with
    // (what its runs left behind, warm module state included), which would end some later run as
    // out of memory rather than let it start in a fresh process.
    const worn = process.runs >= this.options.maxRunsPerProcess || process.residentGrowthMb() > process.memoryMb / 2;
    const full = () => (this.used.get(k)?.length ?? 0) >= Math.max(1, this.options.maxIdleReusable);
    if (this.closed || worn || full() || !process.alive || process.tainted || this.retired.has(process)) return this.dispose(process);
    if (!(await this.options.reset(process))) return this.dispose(process);
    // Retired while it was being reset, or its key filled up meanwhile.
    if (this.closed || this.retired.has(process) || full()) return this.dispose(process);
    process.setBusy(false);
    // The total cap: the least recently used keys' oldest idle processes make room.
    const cap = Math.max(1, this.options.maxIdleReusableTotal);
    while (this.idleReusable() >= cap) {
      const oldest = this.popOldestIdle();
      if (!oldest) break;
      this.track(this.dispose(oldest));
    }
    const list = this.used.get(k) ?? [];
    list.push(process);
    // Most recently used key last.
    this.used.delete(k);
    this.used.set(k, list);
  }

  /** Idle reuse processes, all keys together. */
  private idleReusable(): number {
    let count = 0;
    for (const list of this.used.values()) count += list.length;
    return count;
  }

  /** The oldest idle process of the least recently used reuse key, taken out of the pool. */
  private popOldestIdle(): RuntimeProcess | undefined {
    for (const [k, list] of this.used) {
      const oldest = list.shift();
      if (list.length === 0) this.used.delete(k);
      if (oldest) return oldest;
    }
    return undefined;
  }

  /** An idle live process of the reuse key, which becomes the most recently used one (dead ones found on the way are disposed of). */
  private popIdle(k: string): RuntimeProcess | undefined {
    const list = this.used.get(k);
    if (!list) return undefined;
    let found: RuntimeProcess | undefined;
    while (!found && list.length > 0) {
      const candidate = list.shift();
      if (candidate?.alive) found = candidate;
      else if (candidate) this.track(this.dispose(candidate));
    }
    this.used.delete(k);
    if (list.length > 0) this.used.set(k, list);
    return found;
  }

  /** Kills the process group and removes the working directory; optionally waits for the exit. */
  async dispose(process: RuntimeProcess, waitForExit = false): Promise<void> {
    this.forget(process);
    process.kill('killed');
    if (process.makesOwnDir) {
      // A forked process makes its directory itself: killed before it got that far, it may still
      // make it after a removal here (coderun-* left in the temp dir after close). Removed once it
      // is gone, then.
      let wait: NodeJS.Timeout | undefined;
      await Promise.race([process.exited, new Promise<void>((resolve) => (wait = setTimeout(resolve, EXIT_WAIT_MS)))]);
      clearTimeout(wait);
    }
    try {
      // A sandboxed process's directory was in its own tmpfs, gone with it: nothing on the host to remove.
      if (!process.inSandbox) await removeRunDir(process.home);
    } finally {
      if (waitForExit) {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([process.exited, new Promise<void>((resolve) => (timer = setTimeout(resolve, EXIT_WAIT_MS)))]);
        clearTimeout(timer);
      }
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
    this.owners.clear();
    this.retired.clear();
    // A directory that would not go does not keep the others (or the close) from finishing.
    await Promise.all(everything.map((p) => this.dispose(p, true).catch(() => {})));
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
      // Died while pooled: forget it and its directory (a busy one is disposed of by its run).
      if (this.pooled(process)) {
        this.forget(process);
        if (!process.inSandbox) this.discardDir(process.home);
      }
    });
    return process;
  }

  /** Whether the process waits in a pool (fresh, or idle for its reuse key). */
  private pooled(process: RuntimeProcess): boolean {
    const owner = this.owners.get(process);
    const list = owner ? this.used.get(owner.key) : this.fresh.get(key(process.language, process.memoryMb));
    return list?.includes(process) ?? false;
  }

  /** Takes the process out of every pool and index (it is being disposed of, or died). */
  private forget(process: RuntimeProcess): void {
    this.all.delete(process);
    this.retired.delete(process);
    const owner = this.owners.get(process);
    this.owners.delete(process);
    const k = owner ? owner.key : key(process.language, process.memoryMb);
    const list = (owner ? this.used : this.fresh).get(k);
    const at = list?.indexOf(process) ?? -1;
    if (!list || at === -1) return;
    list.splice(at, 1);
    if (owner && list.length === 0) this.used.delete(k);
  }

  /**
   * Marks a (language, memoryMb) key as recently used; empties the least recently used pools of
   * fresh processes beyond maxKeys (reuse processes have their own bound, maxIdleReusableTotal).
   */
  private touch(k: string): void {
    const list = this.fresh.get(k);
    this.fresh.delete(k);
    this.fresh.set(k, list ?? []);
    while (this.fresh.size > this.options.maxKeys) {
      const [oldest, idle] = this.fresh.entries().next().value as [string, RuntimeProcess[]];
      this.fresh.delete(oldest);
      for (const p of idle) this.track(this.dispose(p));
    }
  }
}

function key(language: Language, memoryMb: number): string {
  return `${language}:${memoryMb}`;
}

function scopeKey(scope: ReuseScope): string {
  return JSON.stringify([scope.itemLaui, scope.actorLaui]);
}

/** Everything a reuse process is bound to: another value of any part is another process. */
function reuseKey(language: Language, memoryMb: number, scope: ReuseScope): string {
  return JSON.stringify([language, memoryMb, scope.itemLaui, scope.actorLaui]);
}

function popAlive(list: RuntimeProcess[] | undefined): RuntimeProcess | undefined {
  while (list && list.length > 0) {
    const candidate = list.shift();
    if (candidate?.alive) return candidate;
  }
  return undefined;
}
