import { execFileSync } from 'node:child_process';
import { chownSync, mkdtempSync } from 'node:fs';
import { chmod, chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The only environment user code (and its install step) sees: no service secrets, a private
 * HOME and TMPDIR inside the run's working directory.
 */
export function scrubbedEnv(dir: string): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
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
 * makeRunDir off the event loop, for the reuse path that makes one per run: a synchronous mkdtemp
 * was ~5% of the service's event loop under reuse load (a directory creation is a journal write).
 */
export async function makeRunDirAsync(root: string = tmpdir(), owner?: RunAs): Promise<string> {
  const dir = await mkdtemp(join(root, 'coderun-'));
  if (owner) await chown(dir, owner.uid, owner.gid);
  return dir;
}

/** Removes a working directory, also when user code left read-only folders in it. */
export async function removeRunDir(dir: string): Promise<void> {
  try {
    await rm(dir, { recursive: true, force: true, maxRetries: 2 });
  } catch {
    await makeWritable(dir).catch(() => {});
    await rm(dir, { recursive: true, force: true }).catch(() => {});
  }
}

async function makeWritable(dir: string): Promise<void> {
  await chmod(dir, 0o700);
  execFileSync('chmod', ['-R', 'u+rwx', dir], { stdio: 'ignore' });
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

/** Resident set size of a process in bytes, or undefined when it is gone. */
export function residentBytes(pid: number, read: (path: string) => string): number | undefined {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(read(`/proc/${pid}/status`));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** Absolute path of the real python3 (not a pyenv shim, which needs the parent's environment). */
export function resolvePython(): string | null {
  try {
    return execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8', timeout: 10_000 }).trim() || null;
  } catch {
    return null;
  }
}
