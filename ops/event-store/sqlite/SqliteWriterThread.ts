import { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import type { AppendRequest, AppendVerdict } from './AppendBatchWriter.ts';
import type { BatchCommitter, CommittedBatch } from './BatchCommitter.ts';
import { SqliteCheckpointer } from './SqliteCheckpointer.ts';
import {
  decodeVerdicts,
  encodeBatch,
  type ErrorFields,
  type FromWriterThread,
  type ToWriterThread,
  type WriterThreadSettings,
} from './writerThreadProtocol.ts';

/** How often the checkpointer copies the WAL into the file: ~1 MiB at a sustained 10 MiB/s of WAL. */
const CHECKPOINT_INTERVAL_MS = 100;
/** 16 MiB of 1 KiB pages: reached only if the checkpointer falls behind or died. */
const BACKSTOP_AUTOCHECKPOINT_PAGES = 16_384;

interface Waiter {
  /** The batch as sent: its verdicts come back without what the sender already knows. */
  batch: ReadonlyArray<AppendRequest>;
  resolve(committed: CommittedBatch): void;
  reject(error: unknown): void;
}

/**
 * Commits batches on a worker thread that owns the write connection, so that neither the
 * transaction nor its fsync blocks the caller's event loop. Each batch is sent at once; the
 * thread commits whatever batches await it in one transaction and answers them together, in the
 * order sent (one port, one synchronous loop), which is how each answer finds its waiters: the
 * oldest ones.
 */
export class SqliteWriterThread implements BatchCommitter {
  private readonly worker: Worker;
  private readonly waiting: Waiter[] = [];
  private readonly exited: Promise<void>;
  private readonly opened: Promise<void>;
  private markOpened = (): void => {};
  private closing = false;
  /** Set when the thread died: every later batch fails at once with it. */
  private failure: Error | undefined;
  private readonly committed = { transactions: 0, appends: 0 };
  /** Checkpoints run beside the writer, not inside its commits (the writer keeps a backstop). */
  private readonly checkpointer: SqliteCheckpointer;

  constructor(settings: Omit<WriterThreadSettings, 'autocheckpointPages'>) {
    this.checkpointer = new SqliteCheckpointer({ file: settings.file, synchronous: settings.synchronous, intervalMs: CHECKPOINT_INTERVAL_MS });
    this.worker = new Worker(new URL('./writerThread.mjs', import.meta.url), {
      workerData: { ...settings, autocheckpointPages: BACKSTOP_AUTOCHECKPOINT_PAGES } satisfies WriterThreadSettings,
    });
    // An idle writer must not keep the process alive, as an idle in-thread store does not;
    // commit() refs it while a batch is in flight, so no acknowledged write is cut short.
    this.worker.unref();
    this.opened = new Promise<void>((resolve) => (this.markOpened = resolve));
    this.worker.on('message', (message: FromWriterThread) => this.answer(message));
    this.worker.on('error', (error) => this.fail(error));
    this.exited = new Promise((resolve) => {
      this.worker.once('exit', (code) => {
        if (!this.closing || code !== 0 || this.waiting.length > 0) this.fail(new Error(`SQLite writer thread exited with code ${code}`));
        resolve();
      });
    });
  }

  commit(batch: ReadonlyArray<AppendRequest>, recordedAt: string): Promise<CommittedBatch> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.closing) return Promise.reject(new Error('SQLite writer thread is closed'));
    return new Promise<CommittedBatch>((resolve, reject) => {
      this.waiting.push({ batch, resolve, reject });
      if (this.waiting.length === 1) this.worker.ref();
      this.send({ type: 'commit', recordedAt, batch: encodeBatch(batch) });
    });
  }

  stats(): { transactions: number; appends: number } {
    return { ...this.committed };
  }

  /** The thread's connection is open; rejects if the thread died first (file unusable...). */
  async ready(): Promise<void> {
    await Promise.race([this.opened, this.exited]);
    if (this.failure) throw this.failure;
  }

  async close(): Promise<void> {
    if (!this.closing) {
      this.closing = true;
      // The writer's connection closes last: the last one to close checkpoints the whole WAL.
      await this.checkpointer.close();
      // Held until the thread has closed its connection: awaiting close() keeps the process up.
      this.worker.ref();
      if (this.failure) await this.worker.terminate();
      else this.send({ type: 'close' });
    }
    await this.exited;
  }

  private send(message: ToWriterThread): void {
    this.worker.postMessage(message);
  }

  private answer(message: FromWriterThread): void {
    if (message.type === 'ready') {
      this.markOpened();
      return;
    }
    const waiters = this.waiting.splice(0, message.batches);
    if (this.waiting.length === 0 && !this.closing) this.worker.unref();
    if (waiters.length !== message.batches) {
      this.fail(new Error(`SQLite writer thread answered ${message.batches} batches, ${waiters.length} were waiting`));
      for (const waiter of waiters) waiter.reject(this.failure);
      return;
    }
    if (message.type === 'failed') {
      const error = toError(message.error);
      for (const waiter of waiters) waiter.reject(error);
      return;
    }
    let verdicts: AppendVerdict[][];
    try {
      verdicts = decodeVerdicts(
        waiters.map((waiter) => waiter.batch),
        message.verdicts,
      );
    } catch (error) {
      // A malformed answer means the two sides disagree on the protocol: nothing more is trusted.
      this.fail(error);
      for (const waiter of waiters) waiter.reject(error);
      return;
    }
    this.committed.transactions += 1;
    for (const [index, waiter] of waiters.entries()) {
      this.committed.appends += waiter.batch.length;
      waiter.resolve({ verdicts: verdicts[index] ?? [], recordedAt: message.recordedAt });
    }
  }

  /**
   * The thread died (an error outside any transaction, or its exit). A batch it had been sent
   * but not answered may or may not have committed: its appends are rejected saying so, never
   * left pending, and the store stops accepting writes.
   */
  private fail(cause: unknown): void {
    this.failure ??= new Error(`SQLite writer thread failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    for (const waiter of this.waiting.splice(0)) {
      waiter.reject(
        new Error(`SQLite writer thread failed before answering; this batch may or may not be committed`, { cause }),
      );
    }
  }
}

/** Rebuilds the thread's error; SqliteError keeps its class and code for callers that branch on them. */
function toError(fields: ErrorFields): Error {
  const error =
    fields.name === 'SqliteError' && fields.code !== undefined
      ? new Database.SqliteError(fields.message, fields.code)
      : Object.assign(new Error(fields.message), { name: fields.name });
  if (fields.stack) error.stack = fields.stack;
  return error;
}
