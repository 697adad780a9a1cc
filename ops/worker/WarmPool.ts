import type { Language } from '../../shared/ports/CodeRunner.ts';
import type { RuntimeProcess } from './RuntimeProcess.ts';
import { removeRunDir } from './sandbox.ts';

const EXIT_WAIT_MS = 2000;

export interface WarmPoolOptions {
  /** Started-ahead processes kept per (language, memoryMb); 0 starts every process on demand. */
  size: number;
  /** Distinct (language, memoryMb) pools kept; the least recently used one beyond this is emptied. */
  maxKeys: number;
  /** A fresh private working directory for a process. */
  makeDir(): string;
  /** Runs served by one process in reuse mode before it is replaced (module caches only grow). */
  maxRunsPerProcess: number;
  start(language: Language, memoryMb: number, dir: string): RuntimeProcess;
  /** Moves a used process to a fresh working directory (reuse); false when it did not answer. */
  reset(process: RuntimeProcess, dir: string): Promise<boolean>;
}

/**
 * Interpreters started ahead of demand. Node's heap limit is a start-up flag, so pools are keyed
 * by (language, memoryMb). Each process owns a fresh private working directory from the start;
 * a run uses it and it is removed with the process. Taking a process refills its pool in the
 * background. Used processes come back only for `reuse` runs, after moving to a fresh directory.
 */
export class WarmPool {
  private readonly fresh = new Map<string, RuntimeProcess[]>();
  private readonly used = new Map<string, RuntimeProcess[]>();
  private readonly all = new Set<RuntimeProcess>();
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

  /** A process for one run: a used one for reuse runs if any, else a fresh warm one, else a new one. */
  take(language: Language, memoryMb: number, reuse: boolean): RuntimeProcess {
    if (this.closed) throw new Error('the code runner is closed');
    const k = key(language, memoryMb);
    this.touch(k);
    if (reuse) {
      const found = popAlive(this.used.get(k));
      if (found) {
        found.setBusy(true);
        return found;
      }
    }
    const found = popAlive(this.fresh.get(k)) ?? this.spawn(language, memoryMb);
    found.setBusy(true);
    if (this.options.size > 0) setImmediate(() => this.refill(language, memoryMb));
    return found;
  }

  /** After a reuse run: keep the process for the next reuse run, in a fresh directory. */
  async recycle(process: RuntimeProcess): Promise<void> {
    const k = key(process.language, process.memoryMb);
    const list = this.used.get(k) ?? [];
    const worn = process.runs >= this.options.maxRunsPerProcess;
    if (this.closed || worn || list.length >= Math.max(1, this.options.size) || !process.alive || process.tainted) return this.dispose(process);
    const oldDir = process.dir;
    const dir = this.options.makeDir();
    if (!(await this.options.reset(process, dir))) {
      await removeRunDir(dir);
      return this.dispose(process);
    }
    process.dir = dir;
    await removeRunDir(oldDir);
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
    await removeRunDir(process.dir);
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
  }

  private refill(language: Language, memoryMb: number): void {
    if (this.closed) return;
    const k = key(language, memoryMb);
    const list = this.fresh.get(k) ?? [];
    this.fresh.set(k, list);
    while (list.length < this.options.size) list.push(this.spawn(language, memoryMb));
  }

  private spawn(language: Language, memoryMb: number): RuntimeProcess {
    const process = this.options.start(language, memoryMb, this.options.makeDir());
    this.all.add(process);
    void process.exited.then(() => {
      // Died while pooled (or after its run): forget it and its directory.
      const k = key(language, memoryMb);
      for (const list of [this.fresh.get(k), this.used.get(k)]) {
        const at = list?.indexOf(process) ?? -1;
        if (at === -1) continue;
        list?.splice(at, 1);
        this.all.delete(process);
        void removeRunDir(process.dir);
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
      for (const p of [...idle, ...usedIdle]) void this.dispose(p);
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
