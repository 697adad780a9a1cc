import { closeSync, existsSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';

const OBJECT_ID = /^[0-9a-f]{24}$/;
/** The session index under the logs root: `sessions/<YYYY-MM-DD>/<HHMMSS>.jsonl` (and `other.jsonl`). */
export const SESSIONS_DIR = 'sessions';
/** A session id the logger files lines under (others go to the category files only). */
export const SESSION_ID = /^[A-Za-z0-9_.-]{1,128}$/;
const DAY = /^\d{4}-\d{2}-\d{2}$/;
let last: { root: string; second: string; place: { dir: string; file: string } } = { root: '', second: '', place: { dir: '', file: '' } };

/**
 * Where a session's log lines go: `<root>/sessions/<YYYY-MM-DD>/<HHMMSS>.jsonl`, the UTC second the
 * session started, which an ObjectId session id (every session the service makes) carries in its
 * first 4 bytes. All of a session's lines land in that one file, however long it runs, so reading
 * a session scans one second's worth of sessions. Any other id goes to `<day of the line>/other.jsonl`.
 *
 * One file per session was the first layout: a file created (and later closed) per task run, ~86
 * million a day at 1,000 runs/s in one directory, and the largest item of the logger's cost.
 */
export function sessionLogFile(root: string, sessionId: string, lineTimestamp: string): { dir: string; file: string } {
  if (OBJECT_ID.test(sessionId)) {
    // The lines of a run come in bursts of the same session, and sessions of one second together.
    const second = sessionId.slice(0, 8);
    if (last.root === root && last.second === second) return last.place;
    const started = new Date(Number.parseInt(second, 16) * 1000).toISOString();
    const place = { dir: join(root, SESSIONS_DIR, started.slice(0, 10)), file: `${started.slice(11, 13)}${started.slice(14, 16)}${started.slice(17, 19)}.jsonl` };
    last = { root, second, place };
    return place;
  }
  return { dir: join(root, SESSIONS_DIR, lineTimestamp.slice(0, 10)), file: 'other.jsonl' };
}

/**
 * The file that holds a session's lines, or null when there is none (yet). The file is shared with
 * the other sessions of the same start second: a reader keeps the lines whose `session_id` is this
 * one. An ObjectId session (every run's) has one place (sessionLogFile); another id is looked for in
 * the days' `other.jsonl` files, the first that names it. Ids the logger never files (not
 * SESSION_ID) have none: nothing here builds a path from an id.
 */
export function findSessionLogFile(logsRoot: string, sessionId: string): string | null {
  if (OBJECT_ID.test(sessionId)) {
    const { dir, file } = sessionLogFile(logsRoot, sessionId, '');
    const path = join(dir, file);
    return existsSync(path) ? path : null;
  }
  if (!SESSION_ID.test(sessionId)) return null;
  const sessions = join(logsRoot, SESSIONS_DIR);
  if (!existsSync(sessions)) return null;
  const needle = `"session_id":${JSON.stringify(sessionId)}`;
  for (const day of readdirSync(sessions).filter((name) => DAY.test(name)).sort()) {
    const path = join(sessions, day, 'other.jsonl');
    if (existsSync(path) && fileContains(path, Buffer.from(needle))) return path;
  }
  return null;
}

/** Whether the file holds `needle`, read 64 KiB at a time (a day of such sessions may be large). */
function fileContains(path: string, needle: Buffer): boolean {
  const fd = openSync(path, 'r');
  try {
    const buffer = Buffer.alloc(64 * 1024 + needle.length);
    let kept = 0;
    for (;;) {
      const read = readSync(fd, buffer, kept, buffer.length - kept, null);
      if (read === 0) return false;
      const filled = kept + read;
      if (buffer.subarray(0, filled).includes(needle)) return true;
      // The last bytes again, in case the needle straddles two reads.
      kept = Math.min(needle.length - 1, filled);
      buffer.copy(buffer, 0, filled - kept, filled);
    }
  } finally {
    closeSync(fd);
  }
}

/** A session's lines, in the order they were written (an id that is no ObjectId: every day's `other.jsonl` is read). */
export function readSessionLog(root: string, sessionId: string): Array<Record<string, unknown>> {
  const files = OBJECT_ID.test(sessionId)
    ? [sessionLogFile(root, sessionId, '')]
    : (existsSync(join(root, SESSIONS_DIR)) ? readdirSync(join(root, SESSIONS_DIR)).sort() : []).map((day) => ({ dir: join(root, SESSIONS_DIR, day), file: 'other.jsonl' }));
  const found: Array<Record<string, unknown>> = [];
  for (const { dir, file } of files) {
    const path = join(dir, file);
    if (!existsSync(path)) continue;
    for (const line of readFileSync(path, 'utf8').split('\n')) {
      // Cheap test first: most lines of the file are other sessions'.
      if (!line.includes(sessionId)) continue;
      const entry = JSON.parse(line) as Record<string, unknown>;
      if (entry.session_id === sessionId) found.push(entry);
    }
  }
  return found;
}
