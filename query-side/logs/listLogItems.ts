import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { logPathSegments, type LogPath } from './resolveLogPath.ts';

export interface LogItem {
  name: string;
  type: 'file' | 'directory';
  /** Bytes; 0 for a directory. */
  size: number;
  /** Last modification, ISO 8601 UTC. */
  modified: string;
  /** Relative to the logs root, `/`-separated: what file/{file_path} and listItems/{folder_path} take. */
  path: string;
}

/**
 * Entries one `data` event lists. A day of sessions is one directory of up to 86,400 files (one per
 * second that started a session): its listing is cut here, `total_count` still counting them all.
 */
export const MAX_LISTED_ITEMS = 10_000;
/** Entries stat'ed at once: a directory of 86,400 files must not mean 86,400 pending calls. */
const STAT_BATCH = 64;

/**
 * The `data` event of listItems (spec 6): the directory's subdirectories, then its files, each
 * group by name (days and session seconds sort by time that way). Listed are the entries a client
 * can open through the logs routes: plain names (logPathSegments) that are regular files or
 * directories themselves. Symlinks are left out, so a link to a place outside the logs root shows
 * neither its target's size nor its date.
 */
export const listLogItems = async (directory: LogPath): Promise<{ directory: string; items: LogItem[]; total_count: number }> => {
  const entries = (await readdir(directory.absolute, { withFileTypes: true }))
    .filter((entry) => (entry.isFile() || entry.isDirectory()) && logPathSegments(entry.name)?.length === 1)
    .sort((a, b) => Number(b.isDirectory()) - Number(a.isDirectory()) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const prefix = directory.relative === '' ? '' : `${directory.relative}/`;
  const items: LogItem[] = [];
  const listed = entries.slice(0, MAX_LISTED_ITEMS);
  for (let start = 0; start < listed.length; start += STAT_BATCH) {
    const batch = await Promise.all(
      listed.slice(start, start + STAT_BATCH).map(async (entry): Promise<LogItem | null> => {
        // lstat: an entry replaced by a symlink since readdir is skipped, not followed.
        const stats = await lstat(join(directory.absolute, entry.name)).catch(() => null);
        if (!stats || !(stats.isFile() || stats.isDirectory())) return null;
        const type = stats.isDirectory() ? 'directory' : 'file';
        return { name: entry.name, type, size: type === 'file' ? stats.size : 0, modified: stats.mtime.toISOString(), path: `${prefix}${entry.name}` };
      }),
    );
    for (const item of batch) if (item) items.push(item);
  }
  return { directory: directory.relative, items, total_count: entries.length };
};
