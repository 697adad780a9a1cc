import { watch, type FSWatcher } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { ForwardLines } from './ForwardLines.ts';
import { sessionEntry } from './sessionEntry.ts';
import type { SseResponse } from './SseResponse.ts';

export interface FollowSettings {
  /**
   * A session that has not ended (no `session_end` line) and has had no new line this long is done:
   * a run that died without its last line, or one silent for that long, does not hold the stream
   * (and its file handle and watcher) for ever. Counted from the file's last change when the
   * stream opens, so following a session that ended long ago without that line ends at once.
   */
  idleTimeoutMs: number;
  /** A comment this often while following keeps proxies from closing a quiet stream. */
  heartbeatMs: number;
  /**
   * The file is also looked at this often: the watcher's change events are the fast path, but
   * some file systems (network mounts, some containers) never send them.
   */
  pollMs: number;
}

export const DEFAULT_HEARTBEAT_MS = 15_000;
export const DEFAULT_POLL_MS = 500;

/**
 * GET /logs/session/{session_id} once the stream is open (status sent): every line of the session
 * as a `log` event, in the order written, then, while the session's run goes on, each new line as
 * it is written, until the line marked `"session_end": true` (the service's last line of a run) or
 * the idle timeout; then `done {state: complete, total_count}`. A session with no line in its file
 * gets the `error` event. The file is read in blocks and the events wait for the socket to drain:
 * memory stays bounded by a block and the socket's buffer, however long the session.
 *
 * Everything the follow holds (watcher, poll timer, file handle) goes the moment the client leaves:
 * the watcher and the timer in the abort handler itself, the file handle as soon as the read in
 * flight (if any) returns.
 */
export const streamSession = async (stream: SseResponse, file: string, sessionId: string, settings: FollowSettings): Promise<void> => {
  let handle: FileHandle;
  try {
    handle = await open(file, 'r');
  } catch {
    stream.finish('error', { message: 'Session not found' });
    return;
  }
  let watcher: FSWatcher | null = null;
  let poll: NodeJS.Timeout | undefined;
  let wake: (() => void) | null = null;
  const release = (): void => {
    clearInterval(poll);
    poll = undefined;
    watcher?.close();
    watcher = null;
    wake?.();
  };
  stream.signal.addEventListener('abort', release, { once: true });
  try {
    const lines = new ForwardLines();
    let count = 0;
    let ended = false;
    /** Sends the session's lines written since the last call; true when there was any. */
    const pump = async (): Promise<boolean> => {
      const before = count;
      for await (const line of lines.read(handle)) {
        if (stream.closed) return false;
        const entry = sessionEntry(line, sessionId);
        if (entry === null) continue;
        await stream.send('log', line);
        count += 1;
        if (entry.session_end === true) {
          ended = true;
          break;
        }
      }
      await stream.flush();
      return count > before;
    };

    const changed = Math.min((await handle.stat()).mtimeMs, Date.now());
    await pump();
    if (stream.closed) return;
    if (count === 0) {
      stream.finish('error', { message: 'Session not found' });
      return;
    }
    let lastLine = changed;
    let lastWrite = Date.now();
    if (!ended && Date.now() - lastLine < settings.idleTimeoutMs) {
      try {
        watcher = watch(file, { persistent: false }, () => wake?.());
        watcher.on('error', () => {
          watcher?.close();
          watcher = null;
        });
      } catch {
        // No watcher here (the file went, or no inotify left): the poll alone sees new lines.
        watcher = null;
      }
      poll = setInterval(() => wake?.(), settings.pollMs);
      poll.unref();
      while (!stream.closed) {
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = null;
        if (stream.closed) return;
        if (await pump()) {
          lastLine = Date.now();
          lastWrite = lastLine;
        }
        if (ended || Date.now() - lastLine >= settings.idleTimeoutMs) break;
        if (Date.now() - lastWrite >= settings.heartbeatMs) {
          await stream.comment('heartbeat');
          lastWrite = Date.now();
        }
      }
    }
    stream.finish('done', { state: 'complete', total_count: count });
  } finally {
    stream.signal.removeEventListener('abort', release);
    release();
    await handle.close();
  }
};
