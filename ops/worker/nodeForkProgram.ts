import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The native addon that lets node fork (built by `npm ci` / `npm install`: see package.json "install"). */
export const NODE_FORK_ADDON = fileURLToPath(new URL('./native/build/Release/nodefork.node', import.meta.url));
const FORK_SERVER_SCRIPT = fileURLToPath(new URL('./runtime/forkserver.cjs', import.meta.url));

let built: boolean | undefined;

/**
 * The node fork server (runtime/forkserver.cjs) as a ForkServer program for one memory limit (V8
 * fixes the heap limit at start, so each limit has its own), or null when the addon is not built:
 * JavaScript runs then start node by exec as before. See forkserver.cjs for the V8 flags.
 */
export function nodeForkProgram(memoryMb: number): { args: string[]; label: string } | null {
  built ??= existsSync(NODE_FORK_ADDON);
  if (!built) return null;
  return { label: 'node', args: ['--single-threaded', '--no-wasm-dynamic-tiering', `--max-old-space-size=${memoryMb}`, FORK_SERVER_SCRIPT, String(memoryMb)] };
}
