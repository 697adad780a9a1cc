import { mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { EventStore, Position } from '../../shared/event-store/EventStore.ts';
import { exportEvents } from './exportEvents.ts';

/**
 * `events archive`: copies the events recorded before a retention window to Parquet files, for
 * users who keep the log's history elsewhere (object storage, a warehouse). Opt-in: nothing
 * archives by itself. It only copies: the live log keeps every event (docs/decisions.md, "Archiving
 * the log copies, never removes").
 *
 * Each run writes one file, `events-<first>-<last>.parquet` (global positions, both included), of
 * the served envelopes (redacted, as `events export` writes them) that follow the newest file
 * already in the directory and were recorded before now - `olderThanMs`. So running it again (from
 * cron, say) archives only what aged since, and the directory reads as one table:
 * `SELECT ... FROM read_parquet('<dir>/events-*.parquet')`.
 */
export interface ArchiveOptions {
  dir: string;
  olderThanMs: number;
  now: Date;
  onProgress?(done: number, total: number): void;
}

export interface ArchiveResult {
  /** The file written, or null when no event had aged past the window since the last archive. */
  file: string | null;
  events: number;
  /** Exclusive start of this run: the last position already archived in the directory (0 for none). */
  from: Position;
  /** The last position archived, `from` when nothing was. */
  last: Position;
  recorded_before: string;
}

const ARCHIVE_FILE = /^events-(\d+)-(\d+)\.parquet$/;

/** The last position the directory's archive files hold, 0 when it holds none. */
export const lastArchivedPosition = (dir: string): Position => {
  let last = 0n;
  for (const name of readdirSync(dir)) {
    const match = ARCHIVE_FILE.exec(name);
    if (match?.[2] !== undefined && BigInt(match[2]) > last) last = BigInt(match[2]);
  }
  return last;
};

/** `90d`, `12h`, `30m`, `45s`, `2w` -> ms; null for anything else. */
export const parseDuration = (text: string): number | null => {
  const match = /^(\d{1,9})([smhdw])$/.exec(text.trim());
  if (!match) return null;
  const unit = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }[match[2] as 's' | 'm' | 'h' | 'd' | 'w'];
  return Number(match[1]) * unit;
};

export const archiveEvents = async (store: EventStore, options: ArchiveOptions): Promise<ArchiveResult> => {
  mkdirSync(options.dir, { recursive: true, mode: 0o700 });
  const from = lastArchivedPosition(options.dir);
  const recordedBeforeMs = options.now.getTime() - options.olderThanMs;
  // Named once its last position is known; exportEvents writes it whole or not at all.
  const pending = join(options.dir, `.archive-${String(from)}.parquet`);
  const result = await exportEvents(store, { from, recordedBeforeMs, format: 'parquet', out: pending, ...(options.onProgress ? { onProgress: options.onProgress } : {}) });
  const recorded_before = new Date(recordedBeforeMs).toISOString();
  if (result.events === 0) {
    rmSync(pending, { force: true });
    return { file: null, events: 0, from, last: from, recorded_before };
  }
  const file = join(options.dir, `events-${String(from + 1n)}-${String(result.last)}.parquet`);
  renameSync(pending, file);
  return { file, events: result.events, from, last: result.last, recorded_before };
};
