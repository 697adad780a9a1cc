import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/** The native addon that lets node fork (built by `npm ci` / `npm install`: see package.json "install"). */
export const NODE_FORK_ADDON = fileURLToPath(new URL('./native/build/Release/nodefork.node', import.meta.url));
/** Preloaded into the fork server: see native/forkcond.c (condition variables of threads a child does not have). */
export const FORK_COND_LIBRARY = fileURLToPath(new URL('./native/build/Release/forkcond.so', import.meta.url));
const FORK_SERVER_SCRIPT = fileURLToPath(new URL('./runtime/forkserver.cjs', import.meta.url));

let usable: boolean | undefined;

/**
 * Whether the addon (and the library preloaded into the fork server) is built and loads into this node (an addon that does not load, say a build for
 * another platform, would make every fork server die at start and every JavaScript run fail).
 * Loading it here has no effect: it only defines functions.
 */
export function nodeForkAddonLoads(): boolean {
  if (usable === undefined) {
    try {
      createRequire(import.meta.url)(NODE_FORK_ADDON);
      usable = existsSync(FORK_COND_LIBRARY);
    } catch {
      usable = false;
    }
  }
  return usable;
}

/**
 * The node fork server (runtime/forkserver.cjs) as a ForkServer program for one memory limit (V8
 * fixes the heap limit at start, so each limit has its own), or null when the addon does not load:
 * JavaScript runs then start node by exec as before. See forkserver.cjs for the V8 flags.
 */
export function nodeForkProgram(memoryMb: number): { args: string[]; label: string; env: Record<string, string> } | null {
  if (!nodeForkAddonLoads()) return null;
  return { label: 'node', env: { LD_PRELOAD: FORK_COND_LIBRARY }, args: ['--no-memory-reducer', '--single-threaded', '--no-wasm-dynamic-tiering', `--max-old-space-size=${memoryMb}`, FORK_SERVER_SCRIPT, String(memoryMb)] };
}

interface NodeForkAddon {
  peerPid(fd: number): number;
}

function addon(): NodeForkAddon {
  return createRequire(import.meta.url)(NODE_FORK_ADDON) as NodeForkAddon;
}

/**
 * The pid, in this process's pid namespace, of the process that connected the Unix socket `fd`
 * (SO_PEERCRED): a child forked inside a bubblewrap sandbox reports its pid in the sandbox's own
 * pid namespace, which means nothing here. Undefined when it cannot be read.
 */
export function socketPeerPid(fd: number): number | undefined {
  try {
    const pid = addon().peerPid(fd);
    return pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}
