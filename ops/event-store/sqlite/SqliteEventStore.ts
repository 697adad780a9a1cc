import type Database from 'better-sqlite3';
import { systemClock, type Clock } from '../../../shared/clock.ts';
import type {
  AppendResult,
  EventStore,
  ExpectedRevision,
  Position,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
  SubscribeOptions,
  Subscription,
} from '../../../shared/event-store/EventStore.ts';
import type { DomainEvent, EventMetadata, EventToAppend } from '../../../shared/events.ts';
import { readAllBounds, readStreamBounds } from '../readBounds.ts';
import { SubscriptionHub } from '../SubscriptionHub.ts';
import { AppendBatchWriter, type PendingAppend } from './AppendBatchWriter.ts';
import { openEventStoreDatabase, type SqliteSynchronous } from './openEventStoreDatabase.ts';

export interface SqliteEventStoreOptions {
  file: string;
  /** 'full' by default: see SqliteSynchronous for what each level survives. */
  synchronous?: SqliteSynchronous;
  clock?: Clock;
  /** How often subscriptions re-read when this store has appended nothing (another process may). */
  pollIntervalMs?: number;
}

const DEFAULT_POLL_INTERVAL_MS = 500;

const COLUMNS = 'position, stream_id, revision, id, type, data, metadata, recorded_at';
type Row = [position: bigint, streamId: string, revision: bigint, id: string, type: string, data: string, metadata: string, recordedAt: string];

export function openSqliteEventStore(options: SqliteEventStoreOptions): SqliteEventStore {
  return new SqliteEventStore(openEventStoreDatabase(options.file, options.synchronous), options);
}

/**
 * The embedded event store: one SQLite file in WAL mode. Appends are group-committed: those made
 * in the same tick are written by one transaction when the event loop next turns.
 */
export class SqliteEventStore implements EventStore {
  private readonly writer: AppendBatchWriter;
  private readonly readAllPage: Database.Statement<[bigint, number], Row>;
  private readonly readStreamRange: Database.Statement<[string, number, number], Row>;
  private readonly head: Database.Statement<[], bigint>;
  private readonly hub: SubscriptionHub;
  private readonly clock: Clock;
  private queue: PendingAppend[] = [];
  private flushScheduled = false;
  private closing: Promise<void> | undefined;
  private readonly stats = { batches: 0, appends: 0 };

  /** Takes a database from openEventStoreDatabase, which sets the pragmas this class relies on. */
  constructor(
    private readonly db: Database.Database,
    options: Omit<SqliteEventStoreOptions, 'file'> = {},
  ) {
    this.clock = options.clock ?? systemClock;
    this.writer = new AppendBatchWriter(db);
    // raw() + safeIntegers(): arrays instead of keyed objects, positions as exact bigints.
    this.readAllPage = db
      .prepare<[bigint, number], Row>(`SELECT ${COLUMNS} FROM events WHERE position > ? ORDER BY position LIMIT ?`)
      .raw()
      .safeIntegers();
    this.readStreamRange = db
      .prepare<[string, number, number], Row>(
        `SELECT ${COLUMNS} FROM events WHERE stream_id = ? AND revision BETWEEN ? AND ? ORDER BY revision`,
      )
      .raw()
      .safeIntegers();
    this.head = db.prepare<[], bigint>('SELECT COALESCE(MAX(position), 0) FROM events').pluck().safeIntegers();
    this.hub = new SubscriptionHub(this, options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS);
  }

  async append<E extends DomainEvent>(
    streamId: string,
    events: ReadonlyArray<EventToAppend<E>>,
    expectedRevision: ExpectedRevision,
  ): Promise<AppendResult> {
    if (this.closing) throw new Error('SqliteEventStore is closed');
    // Serialize now, outside the write transaction, so a bad payload fails only its own append.
    const serialized = events.map((event) => ({
      type: event.type,
      data: JSON.stringify(event.data),
      metadata: JSON.stringify(event.metadata),
    }));
    return new Promise<AppendResult>((resolve, reject) => {
      this.queue.push({ streamId, expected: expectedRevision, events: serialized, resolve, reject });
      if (this.flushScheduled) return;
      this.flushScheduled = true;
      // setImmediate, not a microtask: callers' continuations (await chains) all run before the
      // flush, so a burst of appends and the appends made in answer to acknowledgements batch up.
      setImmediate(() => this.flush());
    });
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    const { from, to } = readStreamBounds(options);
    return this.readStreamRange.all(streamId, from, to).map(toRecordedEvent);
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    const { after, maxCount } = readAllBounds(options);
    return this.readAllPage.all(after, maxCount).map(toRecordedEvent);
  }

  subscribeToAll(options: SubscribeOptions): Subscription {
    if (this.closing) throw new Error('SqliteEventStore is closed');
    return this.hub.subscribe(options);
  }

  async headPosition(): Promise<Position> {
    return this.head.get() ?? 0n;
  }

  /** How many transactions carried how many appends: shows group commit at work. */
  groupCommitStats(): { batches: number; appends: number } {
    return { ...this.stats };
  }

  close(): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    this.flush();
    await this.hub.closeAll();
    this.db.close();
  }

  private flush(): void {
    this.flushScheduled = false;
    const batch = this.queue;
    if (batch.length === 0) return;
    this.queue = [];
    let outcomes;
    try {
      outcomes = this.writer.write(batch, this.clock.now().toISOString());
    } catch (error) {
      for (const append of batch) append.reject(error);
      return;
    }
    this.stats.batches += 1;
    this.stats.appends += batch.length;
    let wroteEvents = false;
    for (const outcome of outcomes) {
      if ('conflict' in outcome) {
        outcome.append.reject(outcome.conflict);
      } else {
        wroteEvents ||= outcome.append.events.length > 0;
        outcome.append.resolve(outcome.result);
      }
    }
    if (wroteEvents) this.hub.notifyAppended();
  }
}

function toRecordedEvent(row: Row): RecordedEvent {
  return {
    position: row[0],
    streamId: row[1],
    revision: Number(row[2]),
    id: row[3],
    type: row[4],
    data: JSON.parse(row[5]) as Record<string, unknown>,
    metadata: JSON.parse(row[6]) as EventMetadata,
    recordedAt: row[7],
  };
}
