import type Database from 'better-sqlite3';
import {
  START,
  WrongExpectedVersionError,
  type AppendResult,
  type ExpectedRevision,
} from '../../../shared/event-store/EventStore.ts';
import { checkExpectedRevision } from '../checkExpectedRevision.ts';
import { ChainHead, type ChainCursor } from './ChainHead.ts';

/**
 * One append as the writer needs it: plain data, its events already serialized (and given their
 * ids) in the caller's tick, so it can be handed to the writer thread as is, and the caller knows
 * every column of the rows it asked for.
 */
export interface AppendRequest {
  streamId: string;
  expected: ExpectedRevision;
  events: ReadonlyArray<{ id: string; type: string; data: string; metadata: string }>;
  /** Written together with the next append or not at all (appendAtomically): the run ends at an unlinked one. */
  linked?: boolean;
}

/**
 * What became of one append of a batch, at the same index as the append. `aborted`: its own
 * expectation held, but another append of its atomic run conflicted, so none of them was written.
 */
export type AppendVerdict = { result: AppendResult } | { conflict: WrongExpectedVersionError } | { aborted: true };

/** An accepted append: its revision and the index, in the batch's rows, of its last event. */
interface Accepted {
  nextExpectedRevision: number;
  lastRow: number | undefined;
}

const COLUMNS_PER_ROW = 9;
/**
 * Rows per INSERT statement: one call per 32 rows instead of one per row saved ~30% of the CPU
 * per event of bulk appends (measured), and 32 * 9 parameters stay far below SQLite's limit.
 */
const ROWS_PER_INSERT = 32;

/**
 * Writes a batch of appends in one transaction, so the batch costs one commit (one fsync).
 * Each append is judged on its own: a conflict skips only that append's writes.
 */
export class AppendBatchWriter {
  private readonly begin: Database.Statement;
  private readonly commit: Database.Statement;
  private readonly rollback: Database.Statement;
  private readonly lastRevision: Database.Statement<[string], number | null>;
  private readonly head: Database.Statement<[], bigint>;
  private readonly inserts = new Map<number, Database.Statement<unknown[], bigint>>();
  /** Every row is hashed as it is queued, following the row before (ChainHead, docs/events.md "The hash chain"). */
  private readonly chain: ChainHead;

  constructor(private readonly db: Database.Database) {
    this.begin = db.prepare('BEGIN IMMEDIATE');
    this.commit = db.prepare('COMMIT');
    this.rollback = db.prepare('ROLLBACK');
    this.lastRevision = db
      .prepare<[string], number | null>('SELECT MAX(revision) FROM events WHERE stream_id = ?')
      .pluck();
    this.head = db.prepare<[], bigint>('SELECT COALESCE(MAX(position), 0) FROM events').pluck().safeIntegers();
    this.chain = new ChainHead(db);
  }

  /** Throws, with nothing written, when SQLite itself fails (disk full, busy beyond the timeout). */
  write(batch: ReadonlyArray<AppendRequest>, recordedAt: string): AppendVerdict[] {
    // IMMEDIATE takes the write lock up front: revisions read below cannot be overtaken by
    // another process (the CLI) before this transaction commits.
    this.begin.run();
    try {
      const rows: Array<string | number | bigint | Buffer> = [];
      const cursor = this.chain.begin();
      const outcomes = this.check(batch, rows, recordedAt, cursor);
      const positions = this.insertRows(rows);
      // An append of no events answers with the head as of this batch.
      const head = outcomes.some((outcome) => 'lastRow' in outcome && outcome.lastRow === undefined)
        ? this.headPosition()
        : START;
      const results = outcomes.map((outcome): AppendVerdict => {
        if ('conflict' in outcome || 'aborted' in outcome) return outcome;
        const { nextExpectedRevision, lastRow } = outcome;
        const position = lastRow === undefined ? head : positions[lastRow];
        if (position === undefined) throw new Error(`SQLite returned no position for row ${lastRow}`);
        return { result: { nextExpectedRevision, position } };
      });
      this.commit.run();
      this.chain.committed(cursor);
      return results;
    } catch (error) {
      this.chain.forget();
      if (this.db.inTransaction) this.rollback.run();
      throw error;
    }
  }

  /**
   * Judges each atomic run of appends (a single append is a run of one) against the file as this
   * transaction sees it, queuing the rows of the accepted runs.
   */
  private check(
    batch: ReadonlyArray<AppendRequest>,
    rows: Array<string | number | bigint | Buffer>,
    recordedAt: string,
    cursor: ChainCursor,
  ): Array<Accepted | { conflict: WrongExpectedVersionError } | { aborted: true }> {
    // Streams accepted earlier in this batch; valid only inside this transaction.
    const accepted = new Map<string, number>();
    const outcomes: Array<Accepted | { conflict: WrongExpectedVersionError } | { aborted: true }> = [];
    for (let start = 0; start < batch.length; ) {
      let end = start;
      while (batch[end]?.linked === true && end + 1 < batch.length) end += 1;
      const run = batch.slice(start, end + 1);
      // Every expectation of the run is checked before any row is queued: all or nothing.
      const lasts = run.map((append): number | WrongExpectedVersionError => {
        try {
          return checkExpectedRevision(append.streamId, append.expected, accepted.get(append.streamId) ?? this.lastRevision.get(append.streamId) ?? 'no_stream');
        } catch (error) {
          if (error instanceof WrongExpectedVersionError) return error;
          throw error;
        }
      });
      const failed = lasts.some((last) => last instanceof WrongExpectedVersionError);
      for (const [index, last] of lasts.entries()) {
        if (last instanceof WrongExpectedVersionError) outcomes.push({ conflict: last });
        else if (failed) outcomes.push({ aborted: true });
        else outcomes.push(this.queueRows(run[index] as AppendRequest, last, rows, recordedAt, accepted, cursor));
      }
      start = end + 1;
    }
    return outcomes;
  }

  private queueRows(
    append: AppendRequest,
    last: number,
    rows: Array<string | number | bigint | Buffer>,
    recordedAt: string,
    accepted: Map<string, number>,
    cursor: ChainCursor,
  ): Accepted {
    const { streamId, events } = append;
    for (const [index, event] of events.entries()) {
      const revision = last + 1 + index;
      const { position, hash } = cursor.link({ stream: streamId, revision, type: event.type, data: event.data, metadata: event.metadata });
      rows.push(position, streamId, revision, event.id, event.type, event.data, event.metadata, recordedAt, Buffer.from(hash, 'hex'));
    }
    const nextExpectedRevision = last + events.length;
    if (events.length > 0) accepted.set(streamId, nextExpectedRevision);
    const lastRow = events.length > 0 ? rows.length / COLUMNS_PER_ROW - 1 : undefined;
    return { nextExpectedRevision, lastRow };
  }

  /** Inserts the rows in order and returns their positions, as SQLite recorded them. */
  private insertRows(rows: ReadonlyArray<string | number | bigint | Buffer>): bigint[] {
    const rowCount = rows.length / COLUMNS_PER_ROW;
    const positions: bigint[] = [];
    for (let start = 0; start < rowCount; start += ROWS_PER_INSERT) {
      const count = Math.min(ROWS_PER_INSERT, rowCount - start);
      const params = rows.slice(start * COLUMNS_PER_ROW, (start + count) * COLUMNS_PER_ROW);
      // SQLite inserts VALUES rows in order, each with a larger rowid, but does not promise the
      // order RETURNING emits them in: sorting restores row order without relying on it.
      const returned = this.insertStatement(count).all(...params);
      positions.push(...returned.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    }
    return positions;
  }

  private insertStatement(rowCount: number): Database.Statement<unknown[], bigint> {
    let statement = this.inserts.get(rowCount);
    if (!statement) {
      const values = Array.from({ length: rowCount }, () => '(?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ');
      // Positions are the chain's (its hashes cover them); RETURNING gives each as recorded, so
      // the answer never rests on counting.
      statement = this.db
        .prepare<unknown[], bigint>(
          `INSERT INTO events (position, stream_id, revision, id, type, data, metadata, recorded_at, hash) VALUES ${values}
           RETURNING position`,
        )
        .pluck()
        .safeIntegers();
      this.inserts.set(rowCount, statement);
    }
    return statement;
  }

  private headPosition(): bigint {
    return this.head.get() ?? 0n;
  }
}
