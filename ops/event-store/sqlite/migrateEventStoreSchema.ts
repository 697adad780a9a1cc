import type Database from 'better-sqlite3';

/**
 * Schema versions, applied in order; `user_version` records how many have run. Append a new
 * entry to change the schema; never edit a released one, files in the field already ran it.
 */
const MIGRATIONS: ReadonlyArray<string> = [
  // 1. The log (the only table up to schema version 1; see LEGACY_EVENTS_SCHEMA). AUTOINCREMENT so a position is never handed out twice, even after the newest
  //    row was removed by hand; UNIQUE(stream_id, revision) is both the optimistic-concurrency
  //    guard of last resort and the index behind readStream and the current-revision lookup.
  `CREATE TABLE events (
     position    INTEGER PRIMARY KEY AUTOINCREMENT,
     stream_id   TEXT    NOT NULL,
     revision    INTEGER NOT NULL,
     id          TEXT    NOT NULL,
     type        TEXT    NOT NULL,
     data        TEXT    NOT NULL,
     metadata    TEXT    NOT NULL,
     recorded_at TEXT    NOT NULL
   );
   CREATE UNIQUE INDEX events_stream_revision ON events (stream_id, revision);`,
  // 2. The compact log (compactLog.ts): every append goes to `log` from here on, `events` keeps
  //    what it holds, unchanged. Streams and types are numbers, the metadata of a command's events
  //    one `log_metadata` row per commit, ids 16 bytes, data and metadata packed text (packedJson.ts).
  //    `log` positions continue from the sequence of `events`, so no position is ever handed out
  //    twice across the two tables either.
  `CREATE TABLE log_streams (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
   CREATE TABLE log_types (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
   CREATE TABLE log_metadata (id INTEGER PRIMARY KEY, recorded_at INTEGER NOT NULL, metadata TEXT NOT NULL);
   CREATE TABLE log (
     position INTEGER PRIMARY KEY AUTOINCREMENT,
     stream   INTEGER NOT NULL,
     revision INTEGER NOT NULL,
     id       BLOB    NOT NULL,
     type     INTEGER NOT NULL,
     version  INTEGER NOT NULL,
     metadata INTEGER NOT NULL,
     data     TEXT    NOT NULL
   );
   CREATE UNIQUE INDEX log_stream_revision ON log (stream, revision);
   INSERT INTO sqlite_sequence (name, seq)
     SELECT 'log', MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0), (SELECT COALESCE(MAX(position), 0) FROM events));`,
  // 3. The hash chain (ChainHead, docs/events.md "The hash chain"): each `log` row written from here
  //    on carries its 32-byte SHA-256; rows written before (the legacy `events` table, `log` rows of
  //    schema 2) have none, are never rewritten, and the first hashed row follows the documented
  //    anchor of the last of them.
  //    Signed checkpoints (CheckpointSigner): the chain's hash at a position, signed with the
  //    service's Ed25519 key; in this file so that a backup copies them with the log they sign.
  `ALTER TABLE log ADD COLUMN hash BLOB;
   CREATE TABLE event_checkpoints (
     position  INTEGER PRIMARY KEY,
     hash      BLOB    NOT NULL,
     signed_at TEXT    NOT NULL,
     signature BLOB    NOT NULL
   );`,
];

/** Schema version 1 alone: the layout of the releases before the compact log (benchmarks compare with it). */
export const LEGACY_EVENTS_SCHEMA = MIGRATIONS[0] as string;

export const EVENT_STORE_SCHEMA_VERSION = MIGRATIONS.length;

/** Brings the file to the current schema. Safe when several processes open it at once. */
export function migrateEventStoreSchema(db: Database.Database): void {
  // IMMEDIATE takes the write lock before reading the version, so two processes opening a
  // fresh file cannot both decide to run migration 1.
  db.exec('BEGIN IMMEDIATE');
  try {
    const current = Number(db.pragma('user_version', { simple: true }));
    if (current > MIGRATIONS.length) {
      throw new Error(
        `Event store schema version ${current} is newer than this code knows (${MIGRATIONS.length})`,
      );
    }
    for (const migration of MIGRATIONS.slice(current)) db.exec(migration);
    if (current !== MIGRATIONS.length) db.pragma(`user_version = ${MIGRATIONS.length}`);
    db.exec('COMMIT');
  } catch (error) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw error;
  }
}
