import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, chownSync, existsSync, mkdtempSync, openSync, readFileSync, readSync } from 'node:fs';
import { endianness, tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkedProgramPath, findSystemProgram, RUN_PATH } from './systemPrograms.ts';
import { DEFAULT_RUN_AS, type RunAsRange } from './runIdentities.ts';
import { TreeRemover } from './TreeRemover.ts';

/**
 * The only environment user code (and its install step) sees: no service secrets, a private
 * HOME and TMPDIR inside the run's working directory, and RUN_PATH, never the service's PATH (which
 * `npm start` prefixes with node_modules/.bin of every parent directory): it is also where a spawn
 * given this environment looks a program name up.
 */
export function scrubbedEnv(dir: string): Record<string, string> {
  return {
    PATH: RUN_PATH,
    HOME: dir,
    LANG: process.env.LANG ?? 'C.UTF-8',
    TMPDIR: dir,
  };
}

/** Unprivileged identity for user code (the service must be able to setuid, e.g. run as root). */
export interface RunAs {
  uid: number;
  gid: number;
}

/** A fresh private (0700) working directory, owned by `owner` when user code runs as another user. */
export function makeRunDir(root: string = tmpdir(), owner?: RunAs): string {
  const dir = mkdtempSync(join(root, 'coderun-'));
  if (owner) chownSync(dir, owner.uid, owner.gid);
  return dir;
}

/**
 * A fresh name for a working directory that a forked process makes itself (as mkdtemp names them;
 * the creation is exclusive, so a taken name fails rather than shares).
 */
export function runDirName(root: string = tmpdir()): string {
  return join(root, `coderun-${randomBytes(9).toString('base64url')}`);
}

/** The service's one remover of run directories: removals share its bounded number of processes. */
const runDirRemover = new TreeRemover();

/**
 * Removes a working directory completely, also when user code left read-only folders, a deep tree
 * or symbolic links in it (never followed), off the event loop (TreeRemover).
 */
export async function removeRunDir(dir: string): Promise<void> {
  await runDirRemover.remove(dir);
}

/** SIGKILL to the whole process group led by `pid` (children are spawned detached). */
export function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** The kernel's page size (AT_PAGESZ in this process's auxiliary vector); 4096 when it cannot be read. */
function pageSize(): number {
  try {
    const auxv = readFileSync('/proc/self/auxv');
    const little = endianness() === 'LE';
    for (let at = 0; at + 16 <= auxv.length; at += 16) {
      const type = little ? auxv.readBigUInt64LE(at) : auxv.readBigUInt64BE(at);
      if (type === 6n) return Number(little ? auxv.readBigUInt64LE(at + 8) : auxv.readBigUInt64BE(at + 8));
      if (type === 0n) break;
    }
  } catch {
    // not Linux, or no /proc
  }
  return 4096;
}

let page: number | null = null;

/**
 * Resident set size of one process, read again and again (memory watchdog): /proc/<pid>/statm
 * stays open and each reading is one pread (~2.5 us), where a readFileSync of /proc/<pid>/status
 * was open, fstat, reads and close (~11 us for the status text alone) on the service's event loop,
 * at every run start and watchdog tick. The descriptor also pins the process: after its exit it
 * reads nothing, never another process that got the pid.
 */
export class ResidentReader {
  private fd: number | null = null;
  private closed = false;
  private readonly buffer = Buffer.alloc(128);

  constructor(private readonly pid: number) {}

  /** Bytes, or undefined when the process is gone (or /proc cannot be read). */
  read(): number | undefined {
    if (this.closed) return undefined;
    try {
      this.fd ??= openSync(`/proc/${this.pid}/statm`, 'r');
      const length = readSync(this.fd, this.buffer, 0, this.buffer.length, 0);
      // "size resident shared text lib data dt", in pages.
      const fields = this.buffer.toString('latin1', 0, length).split(' ');
      const resident = Number(fields[1]);
      if (length === 0 || !Number.isFinite(resident)) return undefined;
      page ??= pageSize();
      return resident * page;
    } catch {
      return undefined;
    }
  }

  close(): void {
    this.closed = true;
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }
}

/**
 * The Python interpreter of the runs: `configured` (WORKER_PYTHON) when given, checked
 * (checkedProgramPath: absolute, executable, no one but root or the service's user can replace it;
 * throws otherwise), else the first python3 in the system directories (systemPrograms.ts), or null.
 * Never `python3` looked up on the service's PATH (README, Security).
 */
export function resolvePython(configured?: string | null): string | null {
  if (configured) return checkedProgramPath(configured, 'WORKER_PYTHON');
  return findSystemProgram('python3');
}

export { DEFAULT_RUN_AS, RunIdentities, type RunAsRange } from './runIdentities.ts';

export type SandboxSetting = 'auto' | 'none' | 'bwrap';

/** How run processes are kept from the service's rights on this host (decideSandbox). */
export type SandboxDecision =
  | { kind: 'run-as'; range: RunAsRange }
  | { kind: 'bwrap' }
  | { kind: 'none'; warning: string }
  | { kind: 'refused'; message: string };

/**
 * - root (or a configured WORKER_RUN_AS_*): every run process drops to an unprivileged identity
 *   (the default range when none is configured);
 * - not root, bubblewrap usable (bwrapUsable, probed once at start): the fork servers run inside a
 *   bubblewrap sandbox (new user, pid, mount, ipc and uts namespaces; DATA_DIR and the service's code
 *   hidden), see bwrapArgs;
 * - neither: code is refused unless WORKER_SANDBOX=none says to run it with the service's rights,
 *   which is warned about at every start.
 * WORKER_SANDBOX=bwrap requires bubblewrap and a service not running as root: otherwise runs are
 * refused (the service fails at start on that). WORKER_SANDBOX=none also turns the default identity off as root
 * (explicit only; warned).
 */
export function decideSandbox(input: { isRoot: boolean; setting: SandboxSetting; runAs: RunAsRange | null; bwrapUsable: boolean }): SandboxDecision {
  const unsafe =
    'WORKER_SANDBOX=none: operator and action code runs with the rights of the service (it can read DATA_DIR, the signing key and the service\'s environment)';
  if (input.setting === 'none') return { kind: 'none', warning: unsafe };
  if (input.setting === 'bwrap') {
    // As root, the sandbox's uid would be root's on the host (files of root stay readable to its
    // owner, capabilities or not): the uid switch of `auto` is the sandbox for root.
    if (input.isRoot) {
      return { kind: 'refused', message: 'WORKER_SANDBOX=bwrap is for a service that does not run as root (in the sandbox, code would keep uid 0 on the host); as root use WORKER_SANDBOX=auto (every run process switches to an unprivileged uid)' };
    }
    return input.bwrapUsable
      ? { kind: 'bwrap' }
      : { kind: 'refused', message: 'WORKER_SANDBOX=bwrap, but bubblewrap is not usable here (`bwrap` in /usr/bin or another system directory, unprivileged user namespaces allowed, the nodefork addon built)' };
  }
  if (input.runAs) return { kind: 'run-as', range: input.runAs };
  if (input.isRoot) return { kind: 'run-as', range: { ...DEFAULT_RUN_AS } };
  if (input.bwrapUsable) return { kind: 'bwrap' };
  return {
    kind: 'refused',
    message:
      'code runs are disabled: the service does not run as root and bubblewrap is not usable here, so run processes cannot be kept from the service\'s rights (install bubblewrap (`bwrap` in /usr/bin or another system directory, unprivileged user namespaces allowed), set WORKER_RUN_AS_UID/GID with CAP_SETUID/CAP_SETGID, run the service as root, or set WORKER_SANDBOX=none to run code with the service\'s rights)',
  };
}

/** The namespaces of every bubblewrap sandbox (the network is kept: runs may call out). */
const BWRAP_NAMESPACES = ['--unshare-user', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--die-with-parent', '--new-session'];

/**
 * Whether bubblewrap works here as this user: `bwrap` in the system directories
 * (systemPrograms.ts), user and pid namespaces allowed, and the nodefork addon built (the runner
 * learns the real pids of processes forked inside the sandbox's pid namespace through it). A spawn
 * (~5-20 ms): once, at start, off the request path.
 */
export function probeBwrap(addonLoads: () => boolean): boolean {
  const bwrap = findSystemProgram('bwrap');
  const done = findSystemProgram('true');
  if (bwrap === null || done === null) return false;
  // `true` by its path (bubblewrap would look a name up on the PATH it is given).
  const probe = spawnSync(bwrap, [...BWRAP_NAMESPACES, '--ro-bind', '/', '/', '--proc', '/proc', '--dev', '/dev', done], {
    env: { PATH: RUN_PATH },
    stdio: 'ignore',
    timeout: 20_000,
  });
  return probe.status === 0 && addonLoads();
}

/** What a bubblewrap sandbox shows of the host (bwrapArgs). */
export interface BwrapLayout {
  /** Hidden behind an empty tmpfs (DATA_DIR, the service's code tree). */
  hidden: ReadonlyArray<string>;
  /** Shown again read-only inside hidden trees (the runtimes and the addon the fork servers load). */
  readOnly: ReadonlyArray<string>;
  /** Shown read-write (the runs' directory root, the runner's socket directory). */
  writable: ReadonlyArray<string>;
  /** A network namespace of its own, with nothing but its loopback (WORKER_NETWORK=none). */
  unshareNet?: boolean;
}

/**
 * bubblewrap's arguments before the command: the host's network unless `unshareNet`; the host's / read-only; a private /tmp, /dev and /proc
 * (a pid namespace of its own: the service, other fork servers and their runs are neither visible
 * nor reachable by signal or ptrace); `hidden` behind empty tmpfs mounts, then `readOnly` and
 * `writable` bound back; the hidden trees last again, so that a writable root that contains one
 * (DATA_DIR under the temp dir) does not show it. The sandbox and all in it die with its parent.
 */
export function bwrapArgs(layout: BwrapLayout): string[] {
  const args = [...BWRAP_NAMESPACES, ...(layout.unshareNet ? ['--unshare-net'] : []), '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp'];
  for (const dir of layout.hidden) args.push('--tmpfs', dir);
  for (const dir of layout.readOnly) args.push('--ro-bind', dir, dir);
  for (const dir of layout.writable) args.push('--bind', dir, dir);
  for (const dir of layout.hidden) if (layout.writable.some((root) => isWithin(dir, root))) args.push('--tmpfs', dir);
  return args;
}

function isWithin(path: string, root: string): boolean {
  const base = root.endsWith('/') ? root : `${root}/`;
  return path === root || path.startsWith(base);
}

const reachable = new Map<string, boolean>();

/**
 * Whether `python` can start and import the standard library as `runAs` (a pyenv interpreter under
 * /root, mode 0700, cannot: forked children would fail at their first lazy import once they
 * dropped privileges). Checked once per (interpreter, identity).
 */
export function pythonReachable(python: string, runAs: RunAs): boolean {
  const key = `${python}\0${runAs.uid}:${runAs.gid}`;
  let ok = reachable.get(key);
  if (ok === undefined) {
    const probe = spawnSync(python, ['-I', '-c', 'import asyncio, json, decimal, email.message, http.client, ssl, urllib.request'], {
      uid: runAs.uid,
      gid: runAs.gid,
      cwd: '/',
      env: { PATH: RUN_PATH, LANG: 'C.UTF-8' },
      stdio: 'ignore',
      timeout: 20_000,
    });
    ok = probe.status === 0;
    reachable.set(key, ok);
  }
  return ok;
}

/** The first of `candidates` that `runAs` can use (pythonReachable), or null. */
export function pythonFor(candidates: ReadonlyArray<string | null>, runAs: RunAs): string | null {
  for (const python of new Set(candidates)) {
    if (python && existsSync(python) && pythonReachable(python, runAs)) return python;
  }
  return null;
}
