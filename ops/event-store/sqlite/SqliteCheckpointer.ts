import { Worker } from 'node:worker_threads';
import type { SqliteSynchronous } from './openEventStoreDatabase.ts';

export interface CheckpointerSettings {
  file: string;
  synchronous: SqliteSynchronous;
  intervalMs: number;
}

/**
 * Checkpoints the event store's WAL on a thread of its own. A connection checkpoints when one of
 * its commits takes the WAL past wal_autocheckpoint, inside that commit: on the writer thread this
 * was a stall of every append waiting behind it, each ~4 MiB (copy into the file, fsync). Measured
 * on the catalog create bench: with no checkpoint in the commit path, 2,550 -> 3,500 items/s and
 * p99 46 -> 26 ms. The writer keeps a high wal_autocheckpoint as a backstop: should this thread
 * fall behind or die, the WAL still stops growing there.
 */
export class SqliteCheckpointer {
  private readonly worker: Worker;
  private readonly exited: Promise<void>;

  constructor(settings: CheckpointerSettings) {
    this.worker = new Worker(new URL('./checkpointerThread.mjs', import.meta.url), { workerData: settings });
    // Never keeps the process alive on its own; close() waits for it.
    this.worker.unref();
    // A failure (file gone, disk error) ends the thread; the writer's backstop takes over.
    this.worker.on('error', () => {});
    this.exited = new Promise((resolve) => this.worker.once('exit', () => resolve()));
  }

  async close(): Promise<void> {
    this.worker.ref();
    this.worker.postMessage({ type: 'close' });
    await this.exited;
  }
}
