import {
  WrongExpectedVersionError,
  type ExpectedRevision,
} from '../../../shared/event-store/EventStore.ts';
import type { AppendRequest, AppendVerdict } from './AppendBatchWriter.ts';
import type { SqliteSynchronous } from './openEventStoreDatabase.ts';

/**
 * The messages between SqliteEventStore and its writer thread, and their encoding.
 *
 * postMessage copies by structured clone, whose cost grows with the number of objects and keys:
 * a batch of 64 appends as objects took ~170 us to clone and its 64 verdicts ~100 us, spent
 * largely on the event loop the writer thread is there to relieve. Flattened into one array of
 * strings and numbers, and verdicts into one BigInt64Array, the same took ~45 us and ~15 us
 * (measured with v8.serialize/deserialize, which postMessage uses).
 */

/** The writer thread's workerData: it opens its own connection to the file with these. */
export interface WriterThreadSettings {
  file: string;
  synchronous: SqliteSynchronous;
  /** The writer connection's wal_autocheckpoint: a backstop, checkpoints run on their own thread. */
  autocheckpointPages: number;
}

/**
 * Appends laid end to end: for each, its stream id, expected revision, event count and linked
 * flag (1: atomic with the next append), then id, type, data and metadata of each event (data and
 * metadata already JSON).
 */
export type FlatBatch = Array<string | number>;

export type ToWriterThread =
  /**
   * One batch. The thread commits, in one transaction, every batch waiting for it when it
   * starts one, and answers them together, in the order sent.
   */
  | { type: 'commit'; recordedAt: string; batch: FlatBatch }
  /** Sent once nothing is in flight any more: the thread closes its connection and ends. */
  | { type: 'close' };

/**
 * The verdicts of the appends of one transaction, its batches end to end: `results` holds, for
 * append i, its next expected revision at 2i and its position at 2i + 1 (positions are SQLite
 * rowids, int64 like this array); `conflicts` lists the appends refused and the actual revision
 * each met, which is all a WrongExpectedVersionError needs besides what the sender already knows
 * (stream id, expected revision); `aborted` lists the appends dropped with a conflicting one of
 * their atomic run.
 */
export interface WireVerdicts {
  results: BigInt64Array<ArrayBuffer>;
  conflicts: Array<[index: number, actual: number | 'no_stream']>;
  /** The appends not written because another append of their atomic run conflicted. */
  aborted: number[];
}

export interface ErrorFields {
  name: string;
  message: string;
  /** SqliteError's code (SQLITE_BUSY, SQLITE_FULL...), which callers may branch on. */
  code?: string;
  stack?: string;
}

export type FromWriterThread =
  /** First message, once the thread's connection is open; batches sent before it just wait. */
  | { type: 'ready' }
  /** One transaction committed: it answers the `batches` oldest unanswered batches. */
  | { type: 'committed'; batches: number; verdicts: WireVerdicts; recordedAt: string }
  /** SQLite failed the whole transaction: nothing of those batches was written. */
  | { type: 'failed'; batches: number; error: ErrorFields };

export function encodeBatch(appends: ReadonlyArray<AppendRequest>): FlatBatch {
  const flat: FlatBatch = [];
  for (const { streamId, expected, events, linked } of appends) {
    flat.push(streamId, expected, events.length, linked === true ? 1 : 0);
    for (const event of events) flat.push(event.id, event.type, event.data, event.metadata);
  }
  return flat;
}

export function decodeBatch(flat: FlatBatch): AppendRequest[] {
  const appends: AppendRequest[] = [];
  let at = 0;
  // The casts undo encodeBatch's own layout, the only producer of these arrays.
  const next = (): string | number => flat[at++] as string | number;
  while (at < flat.length) {
    const streamId = next() as string;
    const expected = next() as ExpectedRevision;
    const count = next() as number;
    const linked = next() === 1;
    const events = [];
    for (let index = 0; index < count; index += 1) {
      events.push({ id: next() as string, type: next() as string, data: next() as string, metadata: next() as string });
    }
    appends.push(linked ? { streamId, expected, events, linked } : { streamId, expected, events });
  }
  return appends;
}

export function encodeVerdicts(verdicts: ReadonlyArray<AppendVerdict>): WireVerdicts {
  const results = new BigInt64Array(verdicts.length * 2);
  const conflicts: WireVerdicts['conflicts'] = [];
  const aborted: number[] = [];
  for (const [index, verdict] of verdicts.entries()) {
    if ('aborted' in verdict) {
      aborted.push(index);
    } else if ('conflict' in verdict) {
      conflicts.push([index, verdict.conflict.actual]);
    } else {
      results[index * 2] = BigInt(verdict.result.nextExpectedRevision);
      results[index * 2 + 1] = verdict.result.position;
    }
  }
  return { results, conflicts, aborted };
}

/**
 * Rebuilds the verdicts of each batch of a transaction, given the batches as sent, in order.
 * Throws when the answer does not fit them: the two sides disagree on the protocol.
 */
export function decodeVerdicts(batches: ReadonlyArray<ReadonlyArray<AppendRequest>>, wire: WireVerdicts): AppendVerdict[][] {
  const total = batches.reduce((sum, batch) => sum + batch.length, 0);
  if (wire.results.length !== total * 2) {
    throw new Error(`SQLite writer thread answered ${wire.results.length / 2} verdicts for ${total} appends`);
  }
  const conflicts = new Map(wire.conflicts);
  const aborted = new Set(wire.aborted);
  let index = 0;
  return batches.map((batch) =>
    batch.map((append): AppendVerdict => {
      const at = index++;
      if (aborted.has(at)) return { aborted: true };
      const actual = conflicts.get(at);
      if (actual !== undefined) return { conflict: new WrongExpectedVersionError(append.streamId, append.expected, actual) };
      return { result: { nextExpectedRevision: Number(wire.results[at * 2]), position: wire.results[at * 2 + 1] ?? 0n } };
    }),
  );
}
