import { realpathSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NODE_FORK_ADDON } from './nodeForkProgram.ts';
import { RUNTIME_DIR } from './RuntimeProcess.ts';
import type { BwrapLayout } from './sandbox.ts';

/** The service's code tree (hidden in the bubblewrap sandbox but for RUNTIME_DIR and ADDON_DIR). */
const SERVICE_ROOT = dirname(fileURLToPath(new URL('../../package.json', import.meta.url)));
const ADDON_DIR = dirname(NODE_FORK_ADDON);

/**
 * What the bubblewrap sandbox of every fork server and install step shows of the host: `hidden`
 * (DATA_DIR), the service's code tree and the service user's home are empty, `tmpRoot` (the runs'
 * private root) is writable.
 */
export function sandboxLayout(hidden: ReadonlyArray<string>, tmpRoot: string, executables: ReadonlyArray<string | null>): BwrapLayout {
  return {
    // Real paths (a symlinked DATA_DIR is hidden where it is), existing ones only (bubblewrap
    // cannot make a mount point for HOME=/nonexistent in the read-only /).
    hidden: existingRealPaths([...hidden, SERVICE_ROOT, ...serviceHome(executables)]),
    // What the fork servers load from the hidden code tree: the runtimes and the addon.
    readOnly: [RUNTIME_DIR, ADDON_DIR],
    writable: [tmpRoot],
  };
}

/**
 * The service user's home directory, hidden in the bubblewrap sandbox too (the runs have its uid:
 * its dotfiles, credentials, shell history), unless an interpreter lives under it (pyenv, nvm),
 * which the fork servers must start from; nothing when HOME is unset or /.
 */
function serviceHome(executables: ReadonlyArray<string | null>): string[] {
  const home = process.env.HOME;
  if (!home || home === '/' || !home.startsWith('/')) return [];
  const base = home.endsWith('/') ? home : `${home}/`;
  return executables.some((executable) => executable !== null && executable.startsWith(base)) ? [] : [home.replace(/\/+$/, '')];
}

function existingRealPaths(paths: ReadonlyArray<string>): string[] {
  const found: string[] = [];
  for (const path of paths) {
    try {
      found.push(realpathSync(path));
    } catch {
      // does not exist: nothing to hide
    }
  }
  return [...new Set(found)];
}
