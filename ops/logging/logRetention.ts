import { readdir, rmdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Clock } from '../../shared/clock.ts';
import { LOG_CATEGORIES } from '../../shared/ports/Logger.ts';
import { SESSIONS_DIR } from './sessionLogFile.ts';

const DAY_MS = 24 * 3600 * 1000;
const DAY_FILE = /^(\d{4}-\d{2}-\d{2})\.jsonl$/;
const DAY_DIR = /^\d{4}-\d{2}-\d{2}$/;

/**
 * Removes the logs older than `days` (LOG_RETENTION_DAYS) under the logs root, as of `now`:
 * - a category's day file `<CATEGORY>/<YYYY-MM-DD>.jsonl` once its whole UTC day is more than
 *   `days` days ago (the day before the UTC day of now - days, and earlier);
 * - a session file `sessions/<YYYY-MM-DD>/<HHMMSS>.jsonl` (or `other.jsonl`) of such a day once it
 *   was last written more than `days` days ago too (a run may outlive its start day: its file stays
 *   while lines come), then the day's folder once empty.
 * Only these names are touched: any other file or folder under the root stays. Returns how many
 * files went. Asynchronous throughout: a day of session files is many files, off the event loop.
 */
export async function sweepLogs(root: string, days: number, now: Date): Promise<number> {
  const oldest = now.getTime() - days * DAY_MS;
  const cutoff = new Date(oldest).toISOString().slice(0, 10);
  let removed = 0;
  for (const category of LOG_CATEGORIES) {
    const folder = join(root, category);
    for (const name of await names(folder)) {
      const day = DAY_FILE.exec(name)?.[1];
      if (day !== undefined && day < cutoff && (await gone(join(folder, name)))) removed += 1;
    }
  }
  const sessions = join(root, SESSIONS_DIR);
  for (const day of await names(sessions)) {
    if (!DAY_DIR.test(day) || day >= cutoff) continue;
    const folder = join(sessions, day);
    for (const name of await names(folder)) {
      if (!name.endsWith('.jsonl')) continue;
      const path = join(folder, name);
      const written = await stat(path).then((info) => info.mtimeMs, () => Infinity);
      if (written < oldest && (await gone(path))) removed += 1;
    }
    await rmdir(folder).catch(() => undefined);
  }
  return removed;
}

export interface LogRetention {
  /** One sweep now (also what the timer runs); resolves with the number of files removed. */
  sweep(): Promise<number>;
  /** No more sweeps; waits for one in progress. */
  stop(): Promise<void>;
}

/**
 * sweepLogs at start and then every `everyMs` (a day), as of the clock's now. A failed sweep is
 * reported to onError and the next one tries again. Sweeps never overlap.
 */
export function startLogRetention(options: {
  root: string;
  days: number;
  clock: Clock;
  everyMs?: number;
  onError?: (error: unknown) => void;
}): LogRetention {
  let running: Promise<number> = Promise.resolve(0);
  let stopped = false;
  const sweep = (): Promise<number> => {
    const next = running.catch(() => 0).then(() => (stopped ? 0 : sweepLogs(options.root, options.days, options.clock.now())));
    next.catch((error: unknown) => options.onError?.(error));
    running = next;
    return next;
  };
  void sweep();
  const timer = setInterval(() => void sweep(), options.everyMs ?? DAY_MS);
  timer.unref();
  return {
    sweep,
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await running.catch(() => 0);
    },
  };
}

async function names(folder: string): Promise<string[]> {
  return readdir(folder).catch(() => []);
}

async function gone(path: string): Promise<boolean> {
  return unlink(path).then(
    () => true,
    () => false,
  );
}
