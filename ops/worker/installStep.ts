import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunLimits } from '../../shared/ports/CodeRunner.ts';
import { TailBuffer, type CappedLog } from './boundedOutput.ts';
import type { RunControl } from './RunControl.ts';
import type { Failure } from './runOutcome.ts';
import { bwrapArgs, killGroup, scrubbedEnv, type BwrapLayout, type RunAs } from './sandbox.ts';

const INSTALL_TAIL_BYTES = 2000;

/** util-linux's setpriv (Debian: always there), for dropping the identity after joining a cgroup; null without it. */
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((path) => existsSync(path)) ?? null;

/**
 * The install step joins the run's cgroup before bash starts: `sh` (still the service's user) writes
 * its own pid into the cgroup, then exec's setpriv, which drops to the run's identity (real, effective
 * and saved ids, no groups) and exec's bash; one pid throughout. Moving bash in after spawn returned
 * raced its first commands: a `setsid job &` forked before the move escaped the cgroup and outlived
 * the run (seen on a loaded machine).
 */
function joinThenExec(procs: string, runAs: RunAs | undefined, code: string): [string, string[]] {
  const drop = runAs && SETPRIV ? [SETPRIV, `--reuid=${runAs.uid}`, `--regid=${runAs.gid}`, '--clear-groups', '--'] : [];
  return ['/bin/sh', ['-c', 'echo $$ > "$0" && exec "$@"', procs, ...drop, 'bash', '-c', code]];
}

/** bashblock: `bash -c` in the run directory, scrubbed env, within the run's time limit. */
export async function runInstall(
  code: string,
  dir: string,
  limits: RunLimits,
  control: RunControl,
  log: CappedLog,
  runAs: RunAs | undefined,
  cgroup: string | undefined,
  sandbox: BwrapLayout | undefined,
): Promise<Failure | null> {
  // In a bubblewrap sandbox of its own (pid namespace included): what it starts, detached or not,
  // dies with it (the namespace's init ends when bash does), and it sees nothing of the runs.
  // As root with a run cgroup: joined before bash starts (joinThenExec).
  const joinFirst = !sandbox && cgroup !== undefined && (runAs === undefined || SETPRIV !== null);
  const [file, args]: [string, string[]] = sandbox
    ? ['bwrap', bwrapArgs({ ...sandbox, writable: [dir] }).concat('--chdir', dir, '--', 'bash', '-c', code)]
    : joinFirst && cgroup !== undefined
      ? joinThenExec(join(cgroup, 'cgroup.procs'), runAs, code)
      : ['bash', ['-c', code]];
  const child = spawn(file, args, {
    cwd: dir,
    env: scrubbedEnv(dir),
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    // Without the join-first wrapper the identity is dropped by spawn itself.
    ...(runAs && !joinFirst ? { uid: runAs.uid, gid: runAs.gid } : {}),
  });
  // No setpriv: moved into the cgroup from here, once spawned. Commands bash runs before the move
  // (on a loaded machine, its first few) escape the cgroup; README, Security, says so.
  if (cgroup && !joinFirst && child.pid !== undefined) {
    try {
      writeFileSync(join(cgroup, 'cgroup.procs'), String(child.pid));
    } catch {
      // the process (and its cgroup) is gone: the run ends anyway
    }
  }
  const stderrTail = new TailBuffer(INSTALL_TAIL_BYTES);
  log.stepTo('install');
  child.stdout.on('data', (chunk: Buffer) => log.append('install', chunk, 'stdout'));
  child.stderr.on('data', (chunk: Buffer) => {
    log.append('install', chunk, 'stderr');
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
