import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { isoTime, type Clock } from '../../shared/clock.ts';
import { LOG_CATEGORIES, type LogEntry, type Logger } from '../../shared/ports/Logger.ts';
import { SESSION_ID, sessionLogFile, SESSIONS_DIR } from './sessionLogFile.ts';

/**
 * Writes structured logs as JSON lines under `<root>` (LOG_DIR, default DATA_DIR/logs):
 *   <root>/<CATEGORY>/<YYYY-MM-DD>.jsonl   one file per category and UTC day, so that a SQL scan of
 *                                          one category for one day reads exactly one file; the six
 *                                          category folders (LOG_CATEGORIES) exist from the start;
 *   <root>/sessions/<YYYY-MM-DD>/<HHMMSS>.jsonl
 *                                          a copy of every line that carries a session_id, in the
 *                                          file of the second the session started (sessionLogFile),
 *                                          so that one session's lines are found in one small file.
 * Lines are appended through buffered streams; a day's streams are closed when the day changes.
 */
/**
 * How long lines wait to be written with those that follow them. The service's readers of the log
 * files flush first (query-side/logs: the routes await `Logger.flush`), so the wait is never what a
 * read sees; it is what a kill -9 loses (the lines of the last 100 ms, never an event).
 */
const DRAIN_DELAY_MS = 100;
/**
 * A file's first chunk of waiting lines: small enough to come from Buffer's shared pool, so the
 * handful of lines of a task run's session file cost no allocation of their own. Chunks double
 * as they fill, up to MAX_CHUNK_BYTES; a longer line gets a buffer of its own.
 */
const FIRST_CHUNK_BYTES = 2 * 1024;
const MAX_CHUNK_BYTES = 64 * 1024;

/**
 * One file's lines since the last drain, already encoded. Kept as strings for up to 20 ms, lines
 * outlive the young generation's collections and get copied into the old one (queueing them was
 * ~5 us of a ~75 us catalog read, against ~1 us to build them); bytes in a buffer are outside the
 * collected heap, and the line strings die young.
 */
class PendingLines {
  private readonly full: Buffer[] = [];
  private chunk = Buffer.allocUnsafe(FIRST_CHUNK_BYTES);
  private used = 0;

  add(line: string): void {
    // At most 3 UTF-8 bytes per UTF-16 unit: checked without measuring the line.
    const most = line.length * 3;
    if (most > this.chunk.length - this.used) {
      if (this.used > 0) {
        this.full.push(this.chunk.subarray(0, this.used));
        this.chunk = Buffer.allocUnsafe(Math.min(MAX_CHUNK_BYTES, this.chunk.length * 2));
        this.used = 0;
      }
      if (most > this.chunk.length) {
        // In its place among the lines: everything before it is in `full` already.
        this.full.push(Buffer.from(line, 'utf8'));
        return;
      }
    }
    this.used += this.chunk.write(line, this.used, 'utf8');
  }

  /** Everything added, in order, as one buffer. */
  bytes(): Buffer {
    const last = this.chunk.subarray(0, this.used);
    return this.full.length === 0 ? last : Buffer.concat([...this.full, last]);
  }
}

export class JsonLinesLogger implements Logger {
  private readonly streams = new Map<string, WriteStream>();
  /** Today's stream per category, so the hot path does no path joins or map lookups by path. */
  private readonly categoryStreams = new Map<string, WriteStream>();
  private currentDay = '';
  private readonly pending = new Map<WriteStream, PendingLines>();
  private drainTimer: NodeJS.Timeout | undefined;
  private readonly ending = new Set<Promise<void>>();

  constructor(
    private readonly root: string,
    private readonly clock: Clock,
    private readonly echo: (line: string, entry: LogEntry) => void = () => undefined,
  ) {
    // 0700: other sessions' output is no run's business (LOG_DIR may lie outside DATA_DIR).
    mkdirSync(root, { recursive: true, mode: 0o700 });
    for (const folder of [SESSIONS_DIR, ...LOG_CATEGORIES]) mkdirSync(join(root, folder), { recursive: true });
  }

  log(entry: LogEntry): void {
    const timestamp = isoTime(this.clock.now());
    const day = timestamp.slice(0, 10);
    if (day !== this.currentDay) this.rollOver(day);
    // The entry with `timestamp` first, without copying it into a new object to stringify: a
    // request logs two lines, and the copy was most of what a line cost. An entry always has keys.
    const line = `{"timestamp":"${timestamp}",${JSON.stringify(entry).slice(1)}\n`;
    let categoryStream = this.categoryStreams.get(entry.category);
    if (!categoryStream) {
      categoryStream = this.stream(join(this.root, entry.category), `${day}.jsonl`);
      this.categoryStreams.set(entry.category, categoryStream);
    }
    this.queue(categoryStream, line);
    if (typeof entry.session_id === 'string' && SESSION_ID.test(entry.session_id)) {
      const { dir, file } = sessionLogFile(this.root, entry.session_id, timestamp);
      this.queue(this.stream(dir, file), line);
    }
    this.echo(line, entry);
  }

  /**
   * Lines go to each file in one write per DRAIN_DELAY_MS: a request logs two lines and a task run
   * a handful, and every write is a thread-pool round trip that, on a small machine, takes a core
   * from the event loop. Draining once per tick still wrote twice per turn of a busy loop (~3.5% of
   * a catalog read's CPU). Every 20 ms was still ~50 appends a second to a dozen files under task
   * load, and each appending write changes its file's size: the event log's next fsync (the same
   * file system's journal) waited for those too, so the run's end commit took ~0.6 ms of fsync
   * where its start took ~0.3 (issue 34). flush()/close() drain at once.
   */
  private queue(stream: WriteStream, line: string): void {
    let lines = this.pending.get(stream);
    if (!lines) {
      lines = new PendingLines();
      this.pending.set(stream, lines);
    }
    lines.add(line);
    this.drainTimer ??= setTimeout(() => this.drain(), DRAIN_DELAY_MS);
  }

  private drain(): void {
    clearTimeout(this.drainTimer);
    this.drainTimer = undefined;
    for (const [stream, lines] of this.pending) {
      if (!stream.closed && !stream.writableEnded) stream.write(lines.bytes());
    }
    this.pending.clear();
  }

  /**
   * Writes what is held and resolves once it is in the files. Only streams with bytes still on
   * their way are waited for (an empty write queues behind them): the log routes flush before every
   * read, and a stream with nothing pending would cost a thread-pool round trip for nothing.
   */
  async flush(): Promise<void> {
    this.drain();
    const busy = [...this.streams.values()].filter((stream) => stream.writableLength > 0);
    await Promise.all([...busy.map((stream) => new Promise<void>((resolve) => stream.write('', () => resolve()))), ...this.ending]);
  }

  async close(): Promise<void> {
    this.drain();
    const streams = [...this.streams.values()];
    this.streams.clear();
    this.categoryStreams.clear();
    for (const stream of streams) this.end(stream);
    await Promise.all(this.ending);
  }

  /** Ends a stream (after its last lines); close() waits for every stream ended so far. */
  private end(stream: WriteStream, last?: Buffer): void {
    const ended: Promise<void> = new Promise<void>((resolve) => {
      if (last) stream.end(last, () => resolve());
      else stream.end(() => resolve());
    }).finally(() => this.ending.delete(ended));
    this.ending.add(ended);
  }

  private rollOver(day: string): void {
    this.drain();
    this.currentDay = day;
    this.categoryStreams.clear();
    for (const stream of this.streams.values()) this.end(stream);
    this.streams.clear();
  }

  private stream(dir: string, file: string): WriteStream {
    const path = join(dir, file);
    let stream = this.streams.get(path);
    if (!stream) {
      mkdirSync(dir, { recursive: true });
      stream = createWriteStream(path, { flags: 'a' });
      // A session file per second of sessions: keep the open-file count bounded.
      if (this.streams.size > 512) this.evictSessions();
      this.streams.set(path, stream);
    }
    return stream;
  }

  private evictSessions(): void {
    for (const [path, stream] of this.streams) {
      if (path.includes(`${join(this.root, SESSIONS_DIR)}`)) {
        const lines = this.pending.get(stream);
        this.pending.delete(stream);
        this.end(stream, lines?.bytes());
        this.streams.delete(path);
      }
    }
  }
}
