import Database from 'better-sqlite3';
import { chmodSync, mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import type { FoldCheckpoint, FoldCheckpoints } from '../../query-side/catalog/FoldCheckpoints.ts';
import type { EventStore } from '../../shared/event-store/EventStore.ts';
import { readModelVersion, snapshotFolder } from './snapshotFile.ts';

/** Raised when the table's layout changes: a file of another layout is emptied, never misread. */
const LAYOUT = '1';
/** Another process (a second api process on the same DATA_DIR) saving at the same time: wait, don't fail. */
const BUSY_TIMEOUT_MS = 2_000;

/** Beside the read-model snapshots: a cache a backup leaves out and a restored service rebuilds (ops/backup). */
export const foldCheckpointsFile = (dataDir: string): string => join(snapshotFolder(dataDir), 'as-of.sqlite');

export interface SqliteFoldCheckpointsOptions {
  file: string;
  /**
   * What the snapshots were folded from: the read models' code version and the log's identity
   * (its first event's id). Snapshots kept under another origin are dropped before any is read:
   * another evolve would fold other documents, another log other streams. Asked for once, at the
   * first load or save, so that a start does not wait for it.
   */
  origin(): Promise<string | null>;
}

/** The origin of fold snapshots folded here: the read models' code (evolve) and the log's first event. */
export const foldOrigin = async (eventStore: EventStore): Promise<string | null> => {
  const [first] = await eventStore.readAll({ maxCount: 1 });
  return first ? `${await readModelVersion()} ${first.id}` : null;
};

interface Row {
  revision: number;
  max_at: string;
  hard_deleted: number;
  doc: string | null;
}

/**
 * The as-of reader's fold snapshots in DATA_DIR/snapshots (mode 0600; DATA_DIR is the service's
 * alone and hidden from runs), one row per snapshot: the first as-of read of a stream after a start
 * reads its rows instead of folding the whole stream. A cache of derived data: WAL with synchronous
 * NORMAL (a power cut may lose the last rows, never corrupt the file), a damaged file is deleted and
 * started anew, and backups leave it out with the read-model snapshots.
 */
export class SqliteFoldCheckpoints implements FoldCheckpoints {
  private opened: Database.Database | null = null;
  private ready: Promise<void> | null = null;
  private closed = false;

  constructor(private readonly options: SqliteFoldCheckpointsOptions) {}

  /** Opened at the first load or save: a start, and a service that never reads as_of, skip it. */
  private get db(): Database.Database {
    if (this.closed) throw new Error('the as-of snapshots are closed');
    this.opened ??= SqliteFoldCheckpoints.open(this.options.file);
    return this.opened;
  }

  private static open(file: string): Database.Database {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    const create = () => {
      const db = new Database(file, { timeout: BUSY_TIMEOUT_MS });
      try {
        db.pragma('journal_mode = WAL');
        db.pragma('synchronous = NORMAL');
        db.exec(`CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
          CREATE TABLE IF NOT EXISTS fold_checkpoints (
            stream TEXT NOT NULL, revision INTEGER NOT NULL, max_at TEXT NOT NULL, hard_deleted INTEGER NOT NULL, doc TEXT,
            PRIMARY KEY (stream, revision)) WITHOUT ROWID;`);
        // SQLite gives the -wal and -shm files the database file's mode.
        chmodSync(file, 0o600);
        return db;
      } catch (error) {
        db.close();
        throw error;
      }
    };
    try {
      return create();
    } catch {
      // Not a database any more (a torn copy, another file at this name): the cache starts anew.
      for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true });
      return create();
    }
  }

  async load(streamId: string): Promise<FoldCheckpoint[]> {
    await this.checkedOrigin();
    const rows = this.db
      .prepare<[string], Row>('SELECT revision, max_at, hard_deleted, doc FROM fold_checkpoints WHERE stream = ? ORDER BY revision')
      .all(streamId);
    return rows.map((row) => ({
      revision: row.revision,
      maxAt: row.max_at,
      hardDeleted: row.hard_deleted === 1,
      doc: row.doc === null ? null : (JSON.parse(row.doc) as ItemDoc),
    }));
  }

  async save(streamId: string, checkpoints: ReadonlyArray<FoldCheckpoint>): Promise<void> {
    await this.checkedOrigin();
    const insert = this.db.prepare('INSERT OR IGNORE INTO fold_checkpoints (stream, revision, max_at, hard_deleted, doc) VALUES (?, ?, ?, ?, ?)');
    this.db.transaction(() => {
      for (const checkpoint of checkpoints) {
        insert.run(streamId, checkpoint.revision, checkpoint.maxAt, checkpoint.hardDeleted ? 1 : 0, checkpoint.doc === null ? null : JSON.stringify(checkpoint.doc));
      }
    })();
  }

  close(): void {
    this.closed = true;
    if (this.opened?.open) this.opened.close();
  }

  /** Once per process: snapshots of another origin (code, log or layout) are dropped before any is used. */
  private checkedOrigin(): Promise<void> {
    this.ready ??= this.options.origin().then(
      (origin) => {
        // An empty log has no item streams yet: asked again at the next use, when it has its first event.
        if (origin === null) this.ready = null;
        const expected = `${LAYOUT} ${origin ?? 'empty log'}`;
        const kept = this.db.prepare<[], { value: string }>("SELECT value FROM meta WHERE key = 'origin'").get()?.value;
        if (kept === expected) return;
        this.db.transaction(() => {
          this.db.exec('DELETE FROM fold_checkpoints');
          this.db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('origin', ?)").run(expected);
        })();
      },
      (error: unknown) => {
        // Asked again at the next use rather than remembered as failed.
        this.ready = null;
        throw error;
      },
    );
    return this.ready;
  }
}
