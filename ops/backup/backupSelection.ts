import { relative, sep } from 'node:path';
import { snapshotFolder } from '../snapshots/snapshotFile.ts';
import { EVENT_LOG } from './backupManifest.ts';

/** The read-model snapshots' folder in DATA_DIR, as ops/snapshots names it. */
const SNAPSHOTS = relative(sep, snapshotFolder(sep)).split(sep).join('/');

export interface SelectionOptions {
  /** Include the logs folder. */
  withLogs: boolean;
  /** LOG_DIR relative to DATA_DIR (`/`-separated), or null when it lies outside DATA_DIR. */
  logs: string | null;
}

const under = (path: string, folder: string): boolean => path === folder || path.startsWith(`${folder}/`);

/**
 * Why a file of DATA_DIR (its `/`-separated path relative to DATA_DIR) stays out of a backup, or
 * null when it goes in. What goes in is what a restored service needs to serve the same items and
 * open sealed secrets: the keys, the publisher's checkpoint and any other file; the log itself goes
 * in through SQLite's backup API, not as files.
 */
export const leftOut = (path: string, options: SelectionOptions): string | null => {
  if (path === EVENT_LOG || path.startsWith(`${EVENT_LOG}-`)) return 'the event log is copied through SQLite';
  // A snapshot written while the backup runs is newer than its copy of the log: a service loading
  // it would serve items the log does not hold and skip the events appended after the restore. A
  // cache anyway: the restored service rebuilds the read models from the log and snapshots anew.
  if (under(path, SNAPSHOTS)) return 'read-model snapshots are rebuilt from the log';
  if (options.logs !== null && !options.withLogs && under(path, options.logs)) return 'logs only with --with-logs';
  // A file being written aside before its rename (checkpoint, snapshot): half of something.
  if (path.endsWith('.tmp')) return 'a file being written';
  return null;
};

/**
 * The publisher's checkpoint as the backup keeps it: never past the backup's log head. The file is
 * copied after the log, so the service may have published further meanwhile; a checkpoint past the
 * restored head would make the restored publisher skip the events appended after the restore. Held
 * back to the head, events between are published again (the publisher is at-least-once anyway).
 */
export const heldBackCheckpoint = (text: string, head: number): string => {
  const trimmed = text.trim();
  if (!/^\d+$/.test(trimmed)) return text;
  return BigInt(trimmed) > BigInt(head) ? `${head}\n` : text;
};
