import { rmSync, statSync } from 'node:fs';
import Database from 'better-sqlite3';
import type { RecordedEvent } from '../../../shared/event-store/EventStore.ts';
import { LEGACY_EVENTS_SCHEMA } from './migrateEventStoreSchema.ts';

/**
 * Measuring what the log stores (bench/logSizeBench.ts): bytes per event type after a position,
 * and the size the same events would take in the layout of the release before.
 */

export interface TypeBytes {
  events: number;
  /**
   * Mean bytes of the event's own columns (data, metadata, id, stream, type, time; no SQLite
   * overhead). In `log` the small integer columns count 8 bytes in all, the metadata row is shared.
   */
  bytes_per_event: number;
}

/**
 * Stored bytes per event type of the events after `after`, from the file at `file`: in the legacy
 * `events` table, every column of the row; in `log`, the row's columns and its share of its
 * command's `log_metadata` row.
 */
export function storedBytesByType(file: string, after: bigint): Record<string, TypeBytes> {
  const db = new Database(file, { readonly: true });
  try {
    const legacy = db
      .prepare<[bigint], { type: string; events: number; bytes: number }>(
        `SELECT type, COUNT(*) AS events,
                SUM(length(CAST(data AS BLOB)) + length(CAST(metadata AS BLOB)) + length(CAST(id AS BLOB)) + length(CAST(stream_id AS BLOB)) + length(CAST(type AS BLOB)) + length(CAST(recorded_at AS BLOB))) AS bytes
         FROM events WHERE position > ? GROUP BY type`,
      )
      .all(after);
    const compact = db
      .prepare<[bigint, bigint], { type: string; events: number; bytes: number }>(
        `WITH shares AS (SELECT metadata, COUNT(*) AS events FROM log WHERE position > ? GROUP BY metadata)
         SELECT t.name AS type, COUNT(*) AS events,
                SUM(length(CAST(l.data AS BLOB)) + length(CAST(l.id AS BLOB)) + 8 + (length(CAST(m.metadata AS BLOB)) + 6.0) / shares.events) AS bytes
         FROM log l JOIN log_types t ON t.id = l.type JOIN log_metadata m ON m.id = l.metadata JOIN shares ON shares.metadata = l.metadata
         WHERE l.position > ? GROUP BY t.name`,
      )
      .all(after, after);
    const byType: Record<string, TypeBytes> = {};
    for (const row of [...legacy, ...compact].sort((a, b) => a.type.localeCompare(b.type))) {
      const previous = byType[row.type];
      const events = row.events + (previous?.events ?? 0);
      const bytes = row.bytes + (previous ? previous.bytes_per_event * previous.events : 0);
      byType[row.type] = { events, bytes_per_event: Math.round(bytes / events) };
    }
    return byType;
  } finally {
    db.close();
  }
}

/**
 * Writes `events` as the release before stored them (one `events` table, JSON text columns, the
 * store's page size and journal) to a new file at `path`, removed after, and returns the bytes
 * they took: the file's size less that of the empty table.
 */
export function writeLegacyLayout(path: string, events: ReadonlyArray<RecordedEvent>): number {
  const db = new Database(path);
  try {
    db.pragma('page_size = 1024');
    db.pragma('journal_mode = WAL');
    db.exec(LEGACY_EVENTS_SCHEMA);
    db.pragma('wal_checkpoint(TRUNCATE)');
    const empty = statSync(path).size;
    const insert = db.prepare('INSERT INTO events (stream_id, revision, id, type, data, metadata, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?)');
    // One transaction per commit of the original (events of one commit share recorded_at).
    const write = db.transaction((rows: RecordedEvent[]) => {
      for (const event of rows) insert.run(event.streamId, event.revision, event.id, event.type, JSON.stringify(event.data), JSON.stringify(event.metadata), event.recordedAt);
    });
    let batch: RecordedEvent[] = [];
    for (const event of events) {
      if (batch.length > 0 && batch[0]?.recordedAt !== event.recordedAt) {
        write(batch);
        batch = [];
      }
      batch.push(event);
    }
    write(batch);
    db.pragma('wal_checkpoint(TRUNCATE)');
    return statSync(path).size - empty;
  } finally {
    db.close();
    for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
  }
}
