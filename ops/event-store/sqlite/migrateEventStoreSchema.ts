import type Database from 'better-sqlite3';

/**
 * Schema versions, applied in order; `user_version` records how many have run. Append a new
 * entry to change the schema; never edit a released one, files in the field already ran it.
 */
const MIGRATIONS: ReadonlyArray<string> = [
  // 1. The log. AUTOINCREMENT so a position is never handed out twice, even after the newest
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
  // 2. The hash chain (ChainHead, docs/events.md "The hash chain"): each row written from here on
  //    carries its 32-byte SHA-256; rows written before keep NULL, never rewritten, and the first
  //    hashed row follows the documented anchor of the last of them.
  //    Signed checkpoints (CheckpointSigner): the chain's hash at a position, signed with the
  //    service's Ed25519 key; in this file so that a backup copies them with the log they sign.
  `ALTER TABLE events ADD COLUMN hash BLOB;
   CREATE TABLE event_checkpoints (
     position  INTEGER PRIMARY KEY,
     hash      BLOB    NOT NULL,
     signed_at TEXT    NOT NULL,
     signature BLOB    NOT NULL
   );`,
];

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
