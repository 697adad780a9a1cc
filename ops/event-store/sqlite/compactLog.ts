import type Database from 'better-sqlite3';
import { STORED_DATA_JSON, type Position, type RecordedEvent } from '../../../shared/event-store/EventStore.ts';
import type { EventMetadata } from '../../../shared/events.ts';
import { exactTimeMs, isoOf, packJson, unpackJson } from './packedJson.ts';

/**
 * The two tables events live in (migrateEventStoreSchema.ts):
 * - `events` (schema 1, the releases before): JSON text, one row per event, every column whole.
 *   Frozen once the file is at schema 2: its rows are read as they are, never rewritten.
 * - `log` (schema 2): the compact rows every append writes since. A row holds its stream and type
 *   as numbers (`log_streams`, `log_types`), its id as 16 bytes, its data packed (packedJson.ts)
 *   and a reference to its command's metadata (`log_metadata`: the metadata packed, stored once
 *   for the events of one command in one commit, with the commit time as ms).
 * Positions continue from `events` into `log` (its AUTOINCREMENT sequence starts where that of
 * `events` stood), so the log is one sequence: `events` first, then `log`.
 */

/** The columns of a legacy row, in the order LEGACY_COLUMNS selects them. */
export type LegacyRow = [position: bigint, streamId: string, revision: bigint, id: string, type: string, data: string, metadata: string, recordedAt: string];
export const LEGACY_COLUMNS = 'position, stream_id, revision, id, type, data, metadata, recorded_at';

/**
 * The columns of a compact row, in the order LOG_COLUMNS selects them (from LOG_FROM). The id is
 * made hex text by SQLite (a BLOB would be a Buffer per row, the slowest part of reading); the
 * command's metadata row comes with each event, LogRowReader decodes it once for all of them.
 */
export type LogRow = [position: number, streamId: string, revision: number, id: string, type: number, version: number, data: string, metadataId: number, recordedAt: number | string, metadata: string];
export const LOG_COLUMNS = "l.position, s.name, l.revision, CASE WHEN typeof(l.id) = 'blob' THEN lower(hex(l.id)) ELSE '=' || l.id END, l.type, l.version, l.data, l.metadata, m.recorded_at, m.metadata";
export const LOG_FROM = 'log l JOIN log_streams s ON s.id = l.stream JOIN log_metadata m ON m.id = l.metadata';

/** The id as written: a UUID from its 32 hex digits (the 16 bytes stored), any other id (stored as text, read with a leading '=') as it was. */
const idOf = (stored: string): string =>
  stored.startsWith('=') ? stored.slice(1) : `${stored.slice(0, 8)}-${stored.slice(8, 12)}-${stored.slice(12, 16)}-${stored.slice(16, 20)}-${stored.slice(20)}`;

/** The newest position of the whole log: `log`'s, else that of `events` (both are O(1) on the primary key). */
export const HEAD_SQL = 'SELECT MAX((SELECT COALESCE(MAX(position), 0) FROM log), (SELECT COALESCE(MAX(position), 0) FROM events))';

/**
 * The newest position of a log file of either schema (read by a backup and a restore, which open
 * files of older releases too, without migrating them): 0 when it holds no event.
 */
export const logFileHead = (db: Database.Database): number => {
  const compact = db.prepare<[], number>("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'log'").pluck().get() === 1;
  return db.prepare<[], number>(compact ? HEAD_SQL : 'SELECT COALESCE(MAX(position), 0) FROM events').pluck().get() ?? 0;
};

/** Decoded legacy rows keep their JSON text: readers that serve data unchanged write it as it is. */
export function legacyRowToEvent(row: LegacyRow): RecordedEvent {
  return {
    position: row[0],
    streamId: row[1],
    revision: Number(row[2]),
    id: row[3],
    type: row[4],
    data: JSON.parse(row[5]) as Record<string, unknown>,
    metadata: JSON.parse(row[6]) as EventMetadata,
    recordedAt: row[7],
    [STORED_DATA_JSON]: row[5],
  };
}

/** The ISO time and the base of the packed times of a `log_metadata.recorded_at` (ms, or the text when it was not an exact ISO time). */
const recordedTime = (stored: number | string): { recordedAt: string; baseMs: number } =>
  typeof stored === 'string' ? { recordedAt: stored, baseMs: 0 } : { recordedAt: isoOf(stored), baseMs: stored };

/** A command's metadata row, decoded: each event gets its own copy of `metadata` (flat: a shallow copy is a copy). */
interface CommandMetadata {
  recordedAt: string;
  baseMs: number;
  metadata: EventMetadata;
}

/** Decoded metadata rows kept: a page of the log holds a few commands, a rebuild walks them in order. */
const METADATA_CACHE = 256;

/**
 * Reads compact rows back to events, with the type names of `log_types` (kept in memory: a few
 * dozen, read again when a row has one not seen yet, which another process may have added) and
 * the decoded metadata of the last commands read.
 */
export class LogRowReader {
  private types = new Map<number, string>();
  private readonly allTypes: Database.Statement<[], { id: number; name: string }>;
  private readonly commands = new Map<number, CommandMetadata>();

  constructor(db: Database.Database) {
    this.allTypes = db.prepare<[], { id: number; name: string }>('SELECT id, name FROM log_types');
  }

  readonly toEvent = (row: LogRow): RecordedEvent => {
    const command = this.command(row);
    // Positions are rowids: beyond 2^53 (9e15 events) a number would not be exact.
    if (!Number.isSafeInteger(row[0])) throw new Error(`log position ${row[0]} is beyond what this reader reads exactly`);
    return {
      position: BigInt(row[0]),
      streamId: row[1],
      revision: row[2],
      id: idOf(row[3]),
      type: this.typeName(row[4]),
      data: unpackJson(row[6], command.baseMs) as Record<string, unknown>,
      metadata: { ...command.metadata, version: row[5] },
      recordedAt: command.recordedAt,
    };
  };

  private command(row: LogRow): CommandMetadata {
    let command = this.commands.get(row[7]);
    if (command === undefined) {
      const { recordedAt, baseMs } = recordedTime(row[8]);
      command = { recordedAt, baseMs, metadata: unpackJson(row[9], baseMs) as EventMetadata };
      if (this.commands.size >= METADATA_CACHE) this.commands.clear();
      this.commands.set(row[7], command);
    }
    return command;
  }

  private typeName(id: number): string {
    let name = this.types.get(id);
    if (name === undefined) {
      this.types = new Map(this.allTypes.all().map((type) => [type.id, type.name]));
      name = this.types.get(id);
      if (name === undefined) throw new Error(`log_types has no type ${id}`);
    }
    return name;
  }
}

/** One event as the writer queues it for `log`: the columns of its row but the metadata's, known at insert. */
export interface LogRowValues {
  stream: number;
  revision: number;
  id: Buffer | string;
  type: number;
  version: number;
  /** Index into the transaction's metadata rows (LogRowEncoder.metadataRows). */
  metadata: number;
  data: string;
}

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The writer's side: stream and type numbers (found, or made, within the transaction), and the
 * packing of one transaction's events. Numbers made by a transaction are remembered only once it
 * commits: a rolled-back transaction's rows (and numbers) are gone.
 */
export class LogRowEncoder {
  private readonly streams = new Map<string, number>();
  private readonly types = new Map<string, number>();
  private readonly madeStreams = new Map<string, number>();
  private readonly madeTypes = new Map<string, number>();
  private readonly findStream: Database.Statement<[string], number>;
  private readonly makeStream: Database.Statement<[string], number>;
  private readonly findType: Database.Statement<[string], number>;
  private readonly makeType: Database.Statement<[string], number>;
  private readonly insertMetadata = new Map<number, Database.Statement<Array<number | string>, number>>();
  /** The transaction's metadata: packed text -> index in metadataRows. */
  private metadataIndex = new Map<string, number>();
  metadataRows: string[] = [];
  private recordedAt: number | string = 0;
  private baseMs = 0;
  /** The last metadata text packed in this transaction, and what it packed to: a command's events share one. */
  private lastMetadata: { text: string; version: number; packed: string } | null = null;

  constructor(private readonly db: Database.Database) {
    this.findStream = db.prepare<[string], number>('SELECT id FROM log_streams WHERE name = ?').pluck();
    this.makeStream = db.prepare<[string], number>('INSERT INTO log_streams (name) VALUES (?) RETURNING id').pluck();
    this.findType = db.prepare<[string], number>('SELECT id FROM log_types WHERE name = ?').pluck();
    this.makeType = db.prepare<[string], number>('INSERT INTO log_types (name) VALUES (?) RETURNING id').pluck();
  }

  /** Starts a transaction's rows, all stored with `recordedAt`. */
  begin(recordedAt: string): void {
    this.metadataIndex = new Map();
    this.metadataRows = [];
    this.lastMetadata = null;
    const ms = exactTimeMs(recordedAt);
    this.recordedAt = Number.isNaN(ms) ? recordedAt : ms;
    this.baseMs = Number.isNaN(ms) ? 0 : ms;
  }

  /** The stream's number, or undefined when it has no row in `log` yet. */
  existingStream(name: string): number | undefined {
    return this.streams.get(name) ?? this.madeStreams.get(name) ?? this.remember(this.streams, name, this.findStream.get(name));
  }

  /** `parsedData`: `JSON.parse(event.data)` when the caller has it already (the writer hashes the same value). */
  row(streamId: string, revision: number, event: { id: string; type: string; data: string; metadata: string }, parsedData: unknown = JSON.parse(event.data)): LogRowValues {
    const stream = this.existingStream(streamId) ?? this.make(this.madeStreams, this.makeStream, streamId);
    const type = this.types.get(event.type) ?? this.madeTypes.get(event.type) ?? this.remember(this.types, event.type, this.findType.get(event.type)) ?? this.make(this.madeTypes, this.makeType, event.type);
    if (this.lastMetadata?.text !== event.metadata) {
      const metadata = JSON.parse(event.metadata) as Record<string, unknown>;
      const version = typeof metadata.version === 'number' ? metadata.version : 1;
      delete metadata.version;
      this.lastMetadata = { text: event.metadata, version, packed: packJson(metadata, this.baseMs) };
    }
    const { version, packed: packedMetadata } = this.lastMetadata;
    let metadataAt = this.metadataIndex.get(packedMetadata);
    if (metadataAt === undefined) {
      metadataAt = this.metadataRows.length;
      this.metadataRows.push(packedMetadata);
      this.metadataIndex.set(packedMetadata, metadataAt);
    }
    return {
      stream,
      revision,
      id: UUID_PATTERN.test(event.id) ? Buffer.from(event.id.replaceAll('-', ''), 'hex') : event.id,
      type,
      version,
      metadata: metadataAt,
      data: packJson(parsedData, this.baseMs),
    };
  }

  /** Inserts the transaction's metadata rows; returns their ids, by index. */
  insertMetadataRows(): number[] {
    const ids: number[] = [];
    // Up to 32 rows per statement, as the events (AppendBatchWriter): a bulk append of events of
    // distinct metadata makes as many rows.
    for (let start = 0; start < this.metadataRows.length; start += 32) {
      const rows = this.metadataRows.slice(start, start + 32);
      let insert = this.insertMetadata.get(rows.length);
      if (!insert) {
        insert = this.db
          .prepare<Array<number | string>, number>(`INSERT INTO log_metadata (recorded_at, metadata) VALUES ${rows.map(() => '(?, ?)').join(', ')} RETURNING id`)
          .pluck();
        this.insertMetadata.set(rows.length, insert);
      }
      // RETURNING's order is not promised; ids grow with the rows' order.
      ids.push(...insert.all(...rows.flatMap((packed) => [this.recordedAt, packed])).sort((a, b) => a - b));
    }
    return ids;
  }

  /** After COMMIT: the numbers the transaction made are real. */
  committed(): void {
    for (const [name, id] of this.madeStreams) this.streams.set(name, id);
    for (const [name, id] of this.madeTypes) this.types.set(name, id);
    this.rolledBack();
    // Bounded: a long-lived writer meets every stream of the catalog; the file remembers them all.
    if (this.streams.size > 100_000) this.streams.clear();
  }

  rolledBack(): void {
    this.madeStreams.clear();
    this.madeTypes.clear();
  }

  private remember(cache: Map<string, number>, name: string, id: number | undefined): number | undefined {
    if (id !== undefined) cache.set(name, id);
    return id;
  }

  private make(made: Map<string, number>, insert: Database.Statement<[string], number>, name: string): number {
    const id = insert.get(name) as number;
    made.set(name, id);
    return id;
  }
}

/** Where a page of the whole log comes from: `events` up to its end, then `log`. */
export const legacyEnd = (db: Database.Database): Position => db.prepare<[], bigint>('SELECT COALESCE(MAX(position), 0) FROM events').pluck().safeIntegers().get() ?? 0n;
