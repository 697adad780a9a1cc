import { accessSync, constants, existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** One run's cgroups beside its memory one (which the fork servers manage): processes and CPU. */
export interface RunCgroup {
  /** The pids cgroup directory (its pids.max is the run's process limit). */
  pids: string | null;
  /** The cpu cgroup directory (its cpu.shares is the run's CPU weight). */
  cpu: string | null;
}

/** Idle run cgroups kept for the next runs (a mkdir and an rmdir per run cost ~0.2 ms of the event loop). */
const POOL_MAX = 64;

/**
 * The process and CPU limits of every run (cgroup v1, as root): `<own cgroup>/coderun-<service pid>-<n>/c<k>`
 * in the pids hierarchy and `<own cgroup>/coderun-<service pid>-<n>-c<k>` in the cpu one, one per
 * live runtime process, limited once (pids.max, cpu.shares) and pooled. The cpu ones sit beside the
 * service's own tasks rather than under a base: a group's cpu.shares only weigh against its
 * siblings, and under a base (1024 shares) all runs together weighed as much as one of the
 * service's threads (or, where the service shares its cgroup, as any one process of the host's):
 * that halved fresh-process throughput on a loaded machine (docs/decisions.md, "Isolation in depth:
 * what it costs"). Beside them, each run weighs as one process did before it had a cgroup, and a run
 * that starts many processes still weighs as one. The run's supervisor (native/sandbox.c) joins
 * them before the run's process exists, so everything the run starts is counted; a run at its
 * process limit is stopped by the supervisor, which reads pids.events. Empty when the hierarchies are not writable here (not root, cgroup v2 only):
 * the limits are then not enforced, which `available` tells.
 */
export class RunCgroups {
  private readonly bases: { pids: string | null; cpu: string | null };
  /** Where the cpu run cgroups go: `<own cpu cgroup>/coderun-<service pid>-<n>-` and their name. */
  private readonly cpuPrefix: string | null;
  private readonly idle: RunCgroup[] = [];
  private count = 0;

  constructor(
    private readonly limits: { maxProcesses: number; cpuWeight: number },
    root = '/sys/fs/cgroup',
  ) {
    const cpu = makeBase(root, 'cpu', false);
    this.bases = { pids: makeBase(root, 'pids', true), cpu };
    this.cpuPrefix = cpu === null ? null : `${cpu}-`;
  }

  /** Whether the process limit is enforced here. */
  get available(): boolean {
    return this.bases.pids !== null;
  }

  take(): RunCgroup {
    const pooled = this.idle.pop();
    if (pooled) return pooled;
    this.count += 1;
    const name = `c${this.count}`;
    const group: RunCgroup = { pids: null, cpu: null };
    if (this.bases.pids) {
      const dir = join(this.bases.pids, name);
      mkdirSync(dir);
      // The supervisor, outside the run's pid namespace, is in it too: one more than the run's own.
      writeFileSync(join(dir, 'pids.max'), String(this.limits.maxProcesses + 1));
      group.pids = dir;
    }
    if (this.cpuPrefix) {
      const dir = `${this.cpuPrefix}${name}`;
      mkdirSync(dir);
      // cgroup v2's weight (1-10000, 100 the default share) as v1's shares (1024 the default).
      writeFileSync(join(dir, 'cpu.shares'), String(Math.max(2, Math.round((this.limits.cpuWeight * 1024) / 100))));
      group.cpu = dir;
    }
    return group;
  }

  /**
   * After the run's process (and so its whole pid namespace) is gone: back to the pool when empty.
   * A cgroup still holding a process (never, when the supervisor reaped its namespace's init) is
   * left alone and removed at close.
   */
  release(group: RunCgroup): void {
    const empty = [group.pids, group.cpu].every((dir) => dir === null || procs(dir).length === 0);
    // A cgroup whose limit was hit keeps counting that (pids.events): not handed to another run.
    if (empty && this.idle.length < POOL_MAX && !limitWasHit(group)) this.idle.push(group);
    else if (empty) removeGroup(group);
  }

  /** Removes every run cgroup and the bases (at the runner's close, after its processes are gone). */
  close(): void {
    this.idle.length = 0;
    if (this.bases.pids !== null) removeTree(this.bases.pids);
    const cpu = this.bases.cpu;
    if (cpu === null) return;
    try {
      const parent = dirname(cpu);
      for (const name of readdirSync(parent)) if (name.startsWith(`${basename(cpu)}-c`)) removeTree(join(parent, name));
    } catch {
      // gone
    }
  }
}

let instances = 0;

/**
 * `<own cgroup>/coderun-<service pid>-<n>` in the hierarchy of `controller`, made when `make`
 * (else only its path: the cpu run cgroups are named after it, beside it).
 */
function makeBase(root: string, controller: string, make: boolean): string | null {
  const own = ownCgroup(controller);
  if (own === null) return null;
  const parent = join(root, controller, own);
  try {
    // Those of services that are gone (a SIGKILLed one leaves them).
    for (const name of readdirSync(parent)) {
      const match = /^coderun-(\d+)(?:-\d+)?(?:-c\d+)?$/.exec(name);
      if (match && !alive(Number(match[1]))) removeTree(join(parent, name));
    }
    // One per runner (a process may hold several: tests start services side by side).
    instances += 1;
    const base = join(parent, `coderun-${process.pid}-${instances}`);
    if (make && !existsSync(base)) mkdirSync(base);
    // Not made: its siblings will be, so the hierarchy must be writable here (not a read-only mount).
    if (!make) accessSync(parent, constants.W_OK);
    return base;
  } catch {
    return null;
  }
}

/** This process's cgroup path in the v1 hierarchy of `controller`, or null. */
function ownCgroup(controller: string): string | null {
  try {
    for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
      const [, controllers, path] = line.split(':', 3);
      if (controllers !== undefined && path !== undefined && controllers.split(',').includes(controller)) return path;
    }
  } catch {
    // no /proc
  }
  return null;
}

function limitWasHit(group: RunCgroup): boolean {
  if (group.pids === null) return false;
  try {
    return !/^max 0$/m.test(readFileSync(join(group.pids, 'pids.events'), 'utf8'));
  } catch {
    return true;
  }
}

function procs(dir: string): string[] {
  try {
    return readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

function removeGroup(group: RunCgroup): void {
  for (const dir of [group.pids, group.cpu]) {
    if (dir === null) continue;
    try {
      rmdirSync(dir);
    } catch {
      // busy: removed at close
    }
  }
}

/** rmdir of a cgroup and its children (cgroup directories hold only control files, removed with them). */
function removeTree(dir: string): void {
  try {
    for (const entry of readdirSync(dir, { withFileTypes: true })) if (entry.isDirectory()) removeTree(join(dir, entry.name));
    rmdirSync(dir);
  } catch {
    // busy or gone
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
