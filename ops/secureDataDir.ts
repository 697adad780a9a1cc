import { chmodSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** The event log's files: the database and SQLite's write-ahead log and shared-memory index. */
const EVENT_LOG_FILES = ['events.sqlite', 'events.sqlite-wal', 'events.sqlite-shm'];

/**
 * DATA_DIR holds the signing key and the event log (password hashes, encrypted secrets): only the
 * service's user may enter it. Made 0700, and tightened on an existing one at every start (one
 * made by an older version was 0755: the logger's recursive mkdir came first); DATA_DIR/keys 0700,
 * its files and the event log's 0600. Run processes have other uids (ops/worker/sandbox.ts), so
 * these modes are what keeps them out.
 */
export function secureDataDir(dataDir: string): void {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  chmodSync(dataDir, 0o700);
  const keys = join(dataDir, 'keys');
  if (existsSync(keys)) {
    chmodSync(keys, 0o700);
    for (const name of readdirSync(keys)) chmodSync(join(keys, name), 0o600);
  }
  secureEventLog(dataDir);
}

/** The event log's files 0600 (SQLite makes the -wal and -shm files with the process's umask, 0644). */
export function secureEventLog(dataDir: string): void {
  for (const name of EVENT_LOG_FILES) {
    const file = join(dataDir, name);
    if (existsSync(file)) chmodSync(file, 0o600);
  }
}
