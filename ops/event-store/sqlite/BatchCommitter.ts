import type Database from 'better-sqlite3';
import { AppendBatchWriter, type AppendRequest, type AppendVerdict } from './AppendBatchWriter.ts';

/**
 * Where SqliteEventStore's batches are committed: on a writer thread (SqliteWriterThread) or on
 * the caller's own thread (MainThreadCommitter). Either way a batch is committed in one
 * transaction (which may carry other batches too), and batches commit in the order sent.
 */
/** A batch's answer: one verdict per append at its index, and its rows' recorded_at. */
export interface CommittedBatch {
  verdicts: AppendVerdict[];
  recordedAt: string;
}

export interface BatchCommitter {
  /**
   * Resolves once the batch's transaction has committed (and, with synchronous=FULL, been
   * fsynced), with one verdict per append at its index; rejects when SQLite failed the whole
   * transaction, or when the outcome cannot be known (the writer thread died). Batches are
   * answered in the order sent. `recordedAt` is the time the rows were stored with: the one asked
   * for, or a later batch's when the transaction carried several.
   */
  commit(batch: ReadonlyArray<AppendRequest>, recordedAt: string): Promise<CommittedBatch>;
  /** Resolves once commits can start without delay; rejects if they never will. */
  ready(): Promise<void>;
  /** Transactions committed so far and the appends they carried: group commit at work. */
  stats(): { transactions: number; appends: number };
  /** Called once nothing is in flight; releases what the committer owns. */
  close(): Promise<void>;
}

/**
 * Commits on the calling thread, through the store's own connection: no thread to start, so it
 * suits short-lived processes such as the CLI, at the price of blocking the event loop for the
 * length of each commit.
 */
export class MainThreadCommitter implements BatchCommitter {
  private readonly writer: AppendBatchWriter;
  private readonly committed = { transactions: 0, appends: 0 };

  constructor(db: Database.Database) {
    this.writer = new AppendBatchWriter(db);
  }

  async commit(batch: ReadonlyArray<AppendRequest>, recordedAt: string): Promise<CommittedBatch> {
    const verdicts = this.writer.write(batch, recordedAt);
    this.committed.transactions += 1;
    this.committed.appends += batch.length;
    return { verdicts, recordedAt };
  }

  stats(): { transactions: number; appends: number } {
    return { ...this.committed };
  }

  async ready(): Promise<void> {}

  async close(): Promise<void> {
    // The connection is the store's, closed by it.
  }
}
