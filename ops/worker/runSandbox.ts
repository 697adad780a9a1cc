import { existsSync, realpathSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SandboxSpec } from './ForkServer.ts';
import { NODE_FORK_ADDON } from './nodeForkProgram.ts';
import { RUNTIME_DIR } from './RuntimeProcess.ts';
import type { RunCgroup } from './runCgroups.ts';

/** The per-run sandbox (native/sandbox.c), built by `npm ci` beside the nodefork addon. */
export const SANDBOX_LIBRARY = fileURLToPath(new URL('./native/build/Release/coderunsandbox.so', import.meta.url));

/** The service's code tree: hidden from runs but for the runtime files and the addon. */
const SERVICE_ROOT = dirname(fileURLToPath(new URL('../../package.json', import.meta.url)));

/**
 * What every run's sandbox shows of the host, read-only: the system (programs, libraries, /etc),
 * nothing else; the interpreters' own trees and the runtime files are added per runner.
 * Not shown: /home, /root, /srv, /var (but an empty /var/tmp), /run (local services' sockets),
 * /mnt, /media, /opt, /sys, the host's /tmp and /dev/shm, DATA_DIR, LOG_DIR, the checkout.
 */
export const SYSTEM_TREES: ReadonlyArray<string> = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc'];

/** Limits of every run, each a setting (README, Configuration). */
export interface RunSandboxLimits {
  /** Size of the run's tmpfs: its directory, /tmp and /var/tmp (WORKER_DISK_MB). */
  diskMb: number;
  /** Size of its /dev/shm and of its SysV shared memory (WORKER_SHM_MB). */
  shmMb: number;
  /** Processes and threads at once (WORKER_MAX_PROCESSES). */
  maxProcesses: number;
  /** CPU weight against other runs and the service, 1-10000, 100 the default share (WORKER_CPU_WEIGHT). */
  cpuWeight: number;
  /** `none`: a network namespace of its own with nothing in it (WORKER_NETWORK=none); else the host's. */
  network: 'none' | 'host';
}

export const DEFAULT_RUN_SANDBOX: RunSandboxLimits = { diskMb: 1024, shmMb: 64, maxProcesses: 512, cpuWeight: 100, network: 'host' };

/** Whether the sandbox library is built here (as root, runs are refused without it). */
export function sandboxLibraryBuilt(): boolean {
  return existsSync(SANDBOX_LIBRARY);
}

/**
 * The layout lines of every run's sandbox: the system trees, the interpreters' trees when they live
 * elsewhere (a python under /opt), the hidden trees (DATA_DIR, LOG_DIR, the checkout: hidden again
 * where a tree above showed them, as /usr/src/app under /usr), then the runtime files and the addon
 * shown again inside them.
 */
export function sandboxLayoutLines(hidden: ReadonlyArray<string>, executables: ReadonlyArray<string | null>): { ro: string[]; hide: string[]; after: string[] } {
  const trees = new Set(SYSTEM_TREES);
  for (const executable of executables) {
    if (!executable) continue;
    const real = safeRealpath(executable);
    if (real === null || [...trees].some((tree) => real.startsWith(`${tree}/`))) continue;
    // <prefix>/bin/python3 -> <prefix> (its lib/ beside it).
    trees.add(dirname(dirname(real)));
  }
  const hide = [...hidden, SERVICE_ROOT].map(safeRealpath).filter((path): path is string => path !== null);
  return { ro: [...trees], hide: [...new Set(hide)], after: [RUNTIME_DIR.replace(/\/+$/, ''), dirname(NODE_FORK_ADDON)] };
}

/** The spec of one run's sandbox (native/sandbox.c): its layout, limits and cgroups. */
export function sandboxSpec(layout: { ro: string[]; hide: string[]; after: string[] }, limits: RunSandboxLimits, cgroup: RunCgroup | null): SandboxSpec {
  return {
    disk_mb: limits.diskMb,
    shm_mb: limits.shmMb,
    // Enough files for a virtualenv (~5,000) many times over; a tree of millions stays out.
    inodes: Math.max(16_384, limits.diskMb * 256),
    limit_pids: limits.maxProcesses,
    net: limits.network,
    ro: layout.ro,
    hide: layout.hide,
    after: layout.after,
    join: [cgroup?.pids, cgroup?.cpu].filter((dir): dir is string => typeof dir === 'string'),
    ...(cgroup?.pids ? { pids_events: `${cgroup.pids}/pids.events` } : {}),
  };
}

function safeRealpath(path: string): string | null {
  try {
    return realpathSync(path);
  } catch {
    return null;
  }
}
