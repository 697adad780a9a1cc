import { constants, type Stats } from 'node:fs';
import { open, realpath, stat, type FileHandle } from 'node:fs/promises';
import { join, sep } from 'node:path';

/**
 * One segment of a path under the logs root: the names the logger writes (`TASK`, `2026-01-02.jsonl`,
 * `sessions`, `134501.jsonl`) and the like. Nothing else gets through: no `..` or `.` (a segment
 * starts with a letter, digit or `_`), no `%` (a double-encoded `%2e%2e` arrives here, decoded
 * once, as `%2e%2e`), no backslash, NUL, colon (a drive letter) or empty segment (a leading `/`,
 * an absolute path). An allow-list, so that a spelling nobody thought of is refused too.
 */
const SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}$/;
const MAX_PATH_LENGTH = 1024;

export interface LogPath {
  /** The real path (symlinks resolved), inside the logs root's real path. */
  absolute: string;
  /** As the client named it, relative to the logs root, `/`-separated; '' for the root itself. */
  relative: string;
  stats: Stats;
}

/** The segments of a requested path, or null when any of them is not a plain name. */
export const logPathSegments = (requested: string): string[] | null => {
  if (requested.length > MAX_PATH_LENGTH) return null;
  if (requested === '') return [];
  const segments = requested.split('/');
  return segments.every((segment) => SEGMENT.test(segment)) ? segments : null;
};

const isInside = (root: string, path: string): boolean => path === root || path.startsWith(root.endsWith(sep) ? root : `${root}${sep}`);

/**
 * A directory or file the logs routes may serve, or null: for a path that is not there, is not of
 * the kind asked for, is not a plain relative path (logPathSegments), or leads outside the logs root
 * once symlinks are resolved (a symlink to a file outside, or a symlinked directory on the way).
 * Every refusal is the same null, so the answer does not tell whether something exists outside.
 */
export const resolveLogPath = async (root: string, requested: string, kind: 'file' | 'directory'): Promise<LogPath | null> => {
  const segments = logPathSegments(requested);
  if (segments === null || (kind === 'file' && segments.length === 0)) return null;
  try {
    const realRoot = await realpath(root);
    const absolute = await realpath(join(realRoot, ...segments));
    if (!isInside(realRoot, absolute)) return null;
    const stats = await stat(absolute);
    if (kind === 'file' ? !stats.isFile() : !stats.isDirectory()) return null;
    return { absolute, relative: segments.join('/'), stats };
  } catch {
    // ENOENT, ENOTDIR, ELOOP, EACCES...: not there as far as a client is told.
    return null;
  }
};

/**
 * Opens a file resolveLogPath found, refusing (null) if what is at its path now is not that file:
 * the last component swapped for a symlink (O_NOFOLLOW) or for another file between the check and
 * the open.
 */
export const openLogFile = async (found: LogPath): Promise<FileHandle | null> => {
  let handle: FileHandle | null = null;
  try {
    handle = await open(found.absolute, constants.O_RDONLY | constants.O_NOFOLLOW);
    const now = await handle.stat();
    if (now.isFile() && now.ino === found.stats.ino && now.dev === found.stats.dev) return handle;
  } catch {
    // Gone or replaced: as not found.
  }
  await handle?.close();
  return null;
};
