import type Database from 'better-sqlite3';
import { followedHash, storedEventHasher } from '../../../shared/event-store/hashChain.ts';

/** A row's place in the chain, as the writer needs it. */
export interface ChainLink {
  position: bigint;
  hash: string | null;
}

/**
 * The head of the log's hash chain, for the writer (AppendBatchWriter): the next position to hand
 * out and the hash the next row follows, kept in memory between transactions. Positions are given
 * by the writer, not left to AUTOINCREMENT, because a row's hash covers its position and is stored
 * in the same INSERT (no second write). Inside the write transaction (BEGIN IMMEDIATE, so no other
 * writer can move in between) the sequence is read; when another process (the CLI) has written
 * since, the head is read again from the file.
 */
export class ChainHead {
  private readonly lastRow: Database.Statement<[], [bigint, Buffer | null]>;
  private readonly sequence: Database.Statement<[], bigint>;
  /** The last row this writer knows, with the sequence as it left it; undefined: read it from the file. */
  private known: { sequence: bigint; last: ChainLink | null } | undefined;
  private readonly hasher = storedEventHasher();

  constructor(db: Database.Database) {
    // The newest row: in the compact `log` (every row written since schema 2), else in the legacy
    // `events` table, whose rows hold no hash (the chain starts from the anchor of the last of them).
    this.lastRow = db
      .prepare<[], [bigint, Buffer | null]>(
        'SELECT position, hash FROM (SELECT position, hash FROM log ORDER BY position DESC LIMIT 1) UNION ALL SELECT * FROM (SELECT position, NULL FROM events ORDER BY position DESC LIMIT 1) ORDER BY position DESC LIMIT 1',
      )
      .raw()
      .safeIntegers();
    // AUTOINCREMENT's own record of the largest position ever handed out (the `log` sequence continues
    // the `events` one): a removed newest row does not give its position again.
    this.sequence = db.prepare<[], bigint>("SELECT COALESCE((SELECT MAX(seq) FROM sqlite_sequence WHERE name IN ('log', 'events')), 0)").pluck().safeIntegers();
  }

  /** Called in the write transaction before any row is queued: a cursor that hands out positions and hashes in order. */
  begin(): ChainCursor {
    const sequence = this.sequence.get() ?? 0n;
    if (this.known?.sequence !== sequence) this.known = { sequence, last: this.readLast() };
    const { last } = this.known;
    const next = (last !== null && last.position > sequence ? last.position : sequence) + 1n;
    return new ChainCursor(next, last, this.hasher);
  }

  /** The transaction committed: the cursor's last row is the head now. */
  committed(cursor: ChainCursor): void {
    const last = cursor.last();
    if (last !== null && this.known !== undefined) this.known = { sequence: last.position > this.known.sequence ? last.position : this.known.sequence, last };
  }

  /** The transaction was rolled back (or failed): read the head from the file next time. */
  forget(): void {
    this.known = undefined;
  }

  private readLast(): ChainLink | null {
    const row = this.lastRow.get();
    return row ? { position: row[0], hash: row[1] === null ? null : row[1].toString('hex') } : null;
  }
}

/** Hands out the positions and hashes of one transaction's rows, each following the one before. */
export class ChainCursor {
  private previous: ChainLink | null;

  constructor(
    private nextPosition: bigint,
    previous: ChainLink | null,
    private readonly hasher: ReturnType<typeof storedEventHasher>,
  ) {
    this.previous = previous;
  }

  /** The next row's position and hash (hex), from its stored JSON. */
  link(row: { stream: string; revision: number; type: string; data: string; parsedData?: unknown; metadata: string }): { position: bigint; hash: string } {
    const position = this.nextPosition;
    const hash = this.hasher({ ...row, position, prevHash: followedHash(this.previous) });
    this.previous = { position, hash };
    this.nextPosition += 1n;
    return { position, hash };
  }

  last(): ChainLink | null {
    return this.previous;
  }
}
