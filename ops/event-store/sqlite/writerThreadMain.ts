/**
 * Body of the event store's writer thread (started through writerThread.mjs): owns the write
 * connection. Being synchronous, it commits one transaction at a time; the batches the store
 * sends meanwhile wait in this thread's message queue, and the next transaction takes all of
 * them. So commits follow each other without waiting for the store's (busy) event loop, and the
 * slower a commit, the more appends the next one carries.
 */
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import type { AppendRequest } from './AppendBatchWriter.ts';
import { AppendBatchWriter } from './AppendBatchWriter.ts';
import { openEventStoreDatabase } from './openEventStoreDatabase.ts';
import {
  decodeBatch,
  encodeVerdicts,
  type ErrorFields,
  type FromWriterThread,
  type ToWriterThread,
  type WriterThreadSettings,
} from './writerThreadProtocol.ts';

type CommitMessage = Extract<ToWriterThread, { type: 'commit' }>;

const port = parentPort;
if (!port) throw new Error('writerThreadMain.ts runs only as a worker thread (see SqliteWriterThread)');
// workerData is untyped; SqliteWriterThread is the only code that starts this thread.
const settings = workerData as WriterThreadSettings;
// Same pragmas as every connection, synchronous above all: FULL fsyncs here, before the reply.
const db = openEventStoreDatabase(settings.file, settings.synchronous, settings.autocheckpointPages);
const writer = new AppendBatchWriter(db);
port.postMessage({ type: 'ready' } satisfies FromWriterThread);

port.on('message', (first: ToWriterThread) => {
  // This message and every one queued behind it, in the order sent; messages only come from
  // SqliteWriterThread, hence the cast.
  const commits: CommitMessage[] = [];
  let close = false;
  for (let message: ToWriterThread | undefined = first; message; message = receiveMessageOnPort(port)?.message as ToWriterThread | undefined) {
    if (message.type === 'close') {
      close = true;
      break;
    }
    commits.push(message);
  }
  if (commits.length > 0) {
    const reply = commitTogether(commits);
    // The results buffer is handed over, not copied.
    port.postMessage(reply, reply.type === 'committed' ? [reply.verdicts.results.buffer] : []);
  }
  if (close) {
    db.close();
    // Nothing else keeps this thread alive: closing the port lets it end, which is what
    // SqliteWriterThread.close() waits for.
    port.close();
  }
});

/** One transaction for all the batches, answered as one reply in their order. */
function commitTogether(commits: ReadonlyArray<CommitMessage>): FromWriterThread {
  const appends: AppendRequest[] = [];
  for (const commit of commits) appends.push(...decodeBatch(commit.batch));
  // One time for the whole transaction: the newest batch's, the nearest to the commit, and
  // non-decreasing along positions as long as the store's clock is.
  const recordedAt = commits.at(-1)?.recordedAt ?? new Date().toISOString();
  try {
    return { type: 'committed', batches: commits.length, verdicts: encodeVerdicts(writer.write(appends, recordedAt)), recordedAt };
  } catch (error) {
    return { type: 'failed', batches: commits.length, error: errorFields(error) };
  }
}

function errorFields(error: unknown): ErrorFields {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  const code = (error as { code?: unknown }).code;
  return {
    name: error.name,
    message: error.message,
    ...(typeof code === 'string' ? { code } : {}),
    ...(error.stack ? { stack: error.stack } : {}),
  };
}
