import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const OBJECT_ID = /^[0-9a-f]{24}$/;
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
    const place = { dir: join(root, 'sessions', started.slice(0, 10)), file: `${started.slice(11, 13)}${started.slice(14, 16)}${started.slice(17, 19)}.jsonl` };
    last = { root, second, place };
    return place;
  }
  return { dir: join(root, 'sessions', lineTimestamp.slice(0, 10)), file: 'other.jsonl' };
}

/** A session's lines, in the order they were written (an id that is no ObjectId: every day's `other.jsonl` is read). */
export function readSessionLog(root: string, sessionId: string): Array<Record<string, unknown>> {
  const files = OBJECT_ID.test(sessionId)
    ? [sessionLogFile(root, sessionId, '')]
    : (existsSync(join(root, 'sessions')) ? readdirSync(join(root, 'sessions')).sort() : []).map((day) => ({ dir: join(root, 'sessions', day), file: 'other.jsonl' }));
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

/**
 * The file holding one session's lines (the logs API reads and follows it), or null when there is
 * none yet. Only ObjectId session ids (every session the service makes) have a file of their own
 * second; another id's lines are spread over every day's `other.jsonl`, so it has none to follow.
 */
export function findSessionLogFile(logsRoot: string, sessionId: string): string | null {
  if (!OBJECT_ID.test(sessionId)) return null;
  const { dir, file } = sessionLogFile(logsRoot, sessionId, '');
  const path = join(dir, file);
  return existsSync(path) ? path : null;
}
