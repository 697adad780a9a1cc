import type Database from 'better-sqlite3';
import type { ChainLinks, EventChain } from '../../../shared/event-store/EventChain.ts';
import type { Position, ReadAllOptions } from '../../../shared/event-store/EventStore.ts';
import { followedHash, storedVersion } from '../../../shared/event-store/hashChain.ts';
import type { SignedCheckpoint } from '../../../shared/event-store/checkpointSignature.ts';
import type { RawEnvelope } from '../../../shared/event-store/verifyChain.ts';
import { readAllBounds } from '../readBounds.ts';
import { LOG_COLUMNS, LOG_FROM, LogRowReader, type LogRow } from './compactLog.ts';

type LegacyChainRow = [position: bigint, stream: string, revision: bigint, type: string, data: string, metadata: string];
type LogChainRow = [...LogRow, hash: Buffer | null];
type LinkRow = [position: bigint, hash: Buffer | null];
type CheckpointRow = [position: bigint, hash: Buffer, signedAt: string, signature: Buffer];

const toCheckpoint = ([position, hash, signed_at, signature]: CheckpointRow): SignedCheckpoint => ({
  position: Number(position),
  hash: hash.toString('hex'),
  signed_at,
  signature: signature.toString('base64'),
});

const hex = (hash: Buffer | null): string | null => (hash === null ? null : hash.toString('hex'));

/**
 * The SQLite log's hash chain as readers get it, through the store's read connection. Only `hash`
 * is stored: `prev_hash` is the hash of the row before (or the anchor of a row without one), one
 * lookup per page or per served event, so the log holds 32 bytes per event, not 64.
 */
export class SqliteEventChain implements EventChain {
  private readonly legacyPage: Database.Statement<[bigint, number], LegacyChainRow>;
  private readonly logPage: Database.Statement<[bigint, number], LogChainRow>;
  private readonly logRows: LogRowReader;
  private readonly at: Database.Statement<[bigint, bigint], LinkRow>;
  private readonly before: Database.Statement<[bigint, bigint], LinkRow>;
  private readonly range: Database.Statement<[bigint, bigint, bigint, bigint], LinkRow>;
  private readonly checkpoints: Database.Statement<[bigint, number], CheckpointRow>;
  private readonly latest: Database.Statement<[], CheckpointRow>;
  private readonly insertCheckpoint: Database.Statement<[bigint, Buffer, string, Buffer]>;

  constructor(db: Database.Database) {
    // Rows of the legacy `events` table hold no hash (the chain anchors after the last of them);
    // rows of the compact `log` are read back to the events they were given as (LogRowReader).
    this.legacyPage = db
      .prepare<[bigint, number], LegacyChainRow>('SELECT position, stream_id, revision, type, data, metadata FROM events WHERE position > ? ORDER BY position LIMIT ?')
      .raw()
      .safeIntegers();
    this.logPage = db
      .prepare<[bigint, number], LogChainRow>(`SELECT ${LOG_COLUMNS}, l.hash FROM ${LOG_FROM} WHERE l.position > ? ORDER BY l.position LIMIT ?`)
      .raw();
    this.logRows = new LogRowReader(db);
    const links = (where: string, order: string) =>
      `SELECT position, hash FROM (SELECT position, hash FROM log WHERE ${where} ${order}) UNION ALL SELECT * FROM (SELECT position, NULL FROM events WHERE ${where} ${order}) ${order}`;
    // Each bound is given twice: once per table.
    this.at = db.prepare<[bigint, bigint], LinkRow>(links('position = ?', '')).raw().safeIntegers();
    this.before = db.prepare<[bigint, bigint], LinkRow>(links('position < ?', 'ORDER BY position DESC LIMIT 1')).raw().safeIntegers();
    this.range = db.prepare<[bigint, bigint, bigint, bigint], LinkRow>(links('position BETWEEN ? AND ?', 'ORDER BY position')).raw().safeIntegers();
    const checkpointColumns = 'position, hash, signed_at, signature';
    this.checkpoints = db
      .prepare<[bigint, number], CheckpointRow>(`SELECT ${checkpointColumns} FROM event_checkpoints WHERE position > ? ORDER BY position LIMIT ?`)
      .raw()
      .safeIntegers();
    this.latest = db.prepare<[], CheckpointRow>(`SELECT ${checkpointColumns} FROM event_checkpoints ORDER BY position DESC LIMIT 1`).raw().safeIntegers();
    // This (reading) connection writes a checkpoint now and then: one small transaction every
    // EVENTS_CHECKPOINT_EVERY events, waiting for the writer thread's lock at most busy_timeout.
    this.insertCheckpoint = db.prepare<[bigint, Buffer, string, Buffer]>('INSERT OR IGNORE INTO event_checkpoints (position, hash, signed_at, signature) VALUES (?, ?, ?, ?)');
  }

  async readCheckpoints(after: Position, limit: number): Promise<SignedCheckpoint[]> {
    return this.checkpoints.all(after, limit).map(toCheckpoint);
  }

  async latestCheckpoint(): Promise<SignedCheckpoint | null> {
    const row = this.latest.get();
    return row ? toCheckpoint(row) : null;
  }

  async saveCheckpoint({ position, hash, signed_at, signature }: SignedCheckpoint): Promise<void> {
    this.insertCheckpoint.run(BigInt(position), Buffer.from(hash, 'hex'), signed_at, Buffer.from(signature, 'base64'));
  }

  async readChain(options: ReadAllOptions): Promise<RawEnvelope[]> {
    const { after, maxCount } = readAllBounds(options);
    const legacy = this.legacyPage.all(after, maxCount).map(([position, stream, revision, type, dataJson, metadataJson]) => ({
      position,
      stream,
      revision,
      type,
      data: JSON.parse(dataJson) as unknown,
      metadata: JSON.parse(metadataJson) as unknown,
      stored: null as Buffer | null,
    }));
    const from = legacy.at(-1)?.position ?? after;
    const compact = this.logPage.all(from, maxCount - legacy.length).map((row) => {
      const event = this.logRows.toEvent(row.slice(0, -1) as unknown as LogRow);
      return { position: event.position, stream: event.streamId, revision: BigInt(event.revision), type: event.type, data: event.data as unknown, metadata: event.metadata as unknown, stored: row.at(-1) as Buffer | null };
    });
    const rows = [...legacy, ...compact];
    const first = rows[0];
    let previous = first === undefined ? null : this.linkBefore(first.position);
    return rows.map(({ position, stream, revision, type, data, metadata, stored }) => {
      const hash = hex(stored);
      const event: RawEnvelope = {
        position: Number(position),
        stream,
        revision: Number(revision),
        type,
        version: storedVersion(metadata),
        data,
        metadata,
        hash,
        prev_hash: hash === null ? null : followedHash(previous),
      };
      previous = { position, hash };
      return event;
    });
  }

  async linksAt(positions: ReadonlyArray<Position>): Promise<Map<Position, ChainLinks>> {
    const links = new Map<Position, ChainLinks>();
    const first = positions.reduce<Position | undefined>((low, position) => (low === undefined || position < low ? position : low), undefined);
    const last = positions.reduce<Position | undefined>((high, position) => (high === undefined || position > high ? position : high), undefined);
    if (first === undefined || last === undefined) return links;
    // A page of GET /events is mostly a run of neighbours: one range read links them all, where two
    // lookups per event would cost ~2,000 statements a page. Sparse positions (a rare type) are looked up one by one.
    if (last - first < BigInt(positions.length) * 4n) {
      const wanted = new Set(positions);
      let previous = this.linkBefore(first);
      for (const [position, stored] of this.range.all(first, last, first, last)) {
        const hash = hex(stored);
        if (wanted.has(position)) links.set(position, { hash, prev_hash: hash === null ? null : followedHash(previous) });
        previous = { position, hash };
      }
      return links;
    }
    for (const position of positions) {
      const row = this.at.get(position, position);
      if (!row) continue;
      const hash = hex(row[1]);
      links.set(position, { hash, prev_hash: hash === null ? null : followedHash(this.linkBefore(position)) });
    }
    return links;
  }

  private linkBefore(position: bigint): { position: bigint; hash: string | null } | null {
    const row = this.before.get(position, position);
    return row ? { position: row[0], hash: hex(row[1]) } : null;
  }
}
