/**
 * Body of the event store's checkpointer thread (started by SqliteCheckpointer): copies the WAL
 * back into the database file every interval with PASSIVE checkpoints, which wait for no reader
 * and no writer, so the writer thread's commits never pay for a checkpoint (see SqliteCheckpointer).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openEventStoreDatabase } from './openEventStoreDatabase.ts';
import type { CheckpointerSettings } from './SqliteCheckpointer.ts';

const port = parentPort;
if (!port) throw new Error('checkpointerMain.ts runs only as a worker thread (see SqliteCheckpointer)');
// workerData is untyped; SqliteCheckpointer is the only code that starts this thread.
const settings = workerData as CheckpointerSettings;
const db = openEventStoreDatabase(settings.file, settings.synchronous);
const timer = setInterval(() => {
  // A checkpoint that cannot go on now (another one running, a reader on an old snapshot) leaves
  // the rest to the next one; only a failure of the file itself stops the thread.
  db.pragma('wal_checkpoint(PASSIVE)');
}, settings.intervalMs);

port.on('message', (message: { type: 'close' }) => {
  if (message.type !== 'close') return;
  clearInterval(timer);
  db.close();
  port.close();
});
