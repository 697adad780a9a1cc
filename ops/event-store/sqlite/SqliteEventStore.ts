import { randomUUID } from 'node:crypto';
import type Database from 'better-sqlite3';
import { systemClock, type Clock } from '../../../shared/clock.ts';
import type {
  AppendResult,
  EventHeader,
  EventStore,
  ExpectedRevision,
  Position,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
  StreamAppend,
  SubscribeOptions,
  Subscription,
} from '../../../shared/event-store/EventStore.ts';
import { START, STORED_DATA_JSON } from '../../../shared/event-store/EventStore.ts';
import { assertDistinctStreams } from '../assertDistinctStreams.ts';
import type { DomainEvent, EventMetadata, EventToAppend } from '../../../shared/events.ts';
import { readAllBounds, readStreamBounds } from '../readBounds.ts';
import { SubscriptionHub } from '../SubscriptionHub.ts';
import type { AppendRequest } from './AppendBatchWriter.ts';
import { MainThreadCommitter, type BatchCommitter, type CommittedBatch } from './BatchCommitter.ts';
import { currentSchemaVersion, upcast } from '../../../shared/event-store/upcast.ts';
import { CommittedTail, type StoredEvent } from './CommittedTail.ts';
import { HEAD_SQL, LEGACY_COLUMNS, LOG_COLUMNS, LOG_FROM, legacyEnd, legacyRowToEvent, LogRowReader, type LegacyRow, type LogRow } from './compactLog.ts';
import { openEventStoreDatabase, type SqliteSynchronous } from './openEventStoreDatabase.ts';
import { SqliteWriterThread } from './SqliteWriterThread.ts';
import { SqliteEventChain } from './SqliteEventChain.ts';
import type { EventChain } from '../../../shared/event-store/EventChain.ts';

/**
 * Where commits run:
 * - 'worker-thread' (default): a worker thread owns the write connection, so transactions and
 *   their fsyncs never block this thread's event loop (HTTP, projections, workers);
 * - 'main-thread': commits run on this thread, as a synchronous call; no thread to start, which
 *   suits short-lived processes that do one thing and close.
 */
export type SqliteWriterPlacement = 'worker-thread' | 'main-thread';

export interface SqliteEventStoreOptions {
  file: string;
  /** 'full' by default: see SqliteSynchronous for what each level survives. */
  synchronous?: SqliteSynchronous;
  /** 'worker-thread' by default. */
  writer?: SqliteWriterPlacement;
  clock?: Clock;
  /** How often subscriptions re-read when this store has appended nothing (another process may). */
  pollIntervalMs?: number;
}

const DEFAULT_POLL_INTERVAL_MS = 500;


/**
 * One caller's appends waiting for their batch: what is sent to the writer (one append, or an
 * atomic run of several), and the caller to answer with one result per append.
 */
interface PendingAppend {
  requests: AppendRequest[];
  resolve(results: AppendResult[]): void;
  reject(error: unknown): void;
}

export function openSqliteEventStore(options: SqliteEventStoreOptions): SqliteEventStore {
  const { file, synchronous = 'full', writer = 'worker-thread' } = options;
  // This thread's connection, used for reads (and for commits on 'main-thread'). Opening it
  // first also creates or migrates the file, and fails here, synchronously, on a bad file.
  const db = openEventStoreDatabase(file, synchronous);
  try {
    const committer = writer === 'main-thread' ? new MainThreadCommitter(db) : new SqliteWriterThread({ file, synchronous });
    return new SqliteEventStore(db, committer, options);
  } catch (error) {
    db.close();
    throw error;
  }
}

/**
 * The embedded event store: one SQLite file in WAL mode. Appends are group-committed: those made
 * in the same tick go as one batch when the event loop next turns, and on the writer thread the
 * batches sent while a transaction commits all go together in the next one. So the number of
 * commits (fsyncs) grows more slowly than the number of writers.
 *
 * Reads use this thread's own connection. WAL lets it read while the writer commits, and every
 * read starts a fresh snapshot, so a read made after an append was acknowledged sees it.
 */
export class SqliteEventStore implements EventStore {
  private readonly readAllPage: Database.Statement<[bigint, number], LogRow>;
  private readonly readStreamRange: Database.Statement<[string, number, number], LogRow>;
  private readonly readLegacyPage: Database.Statement<[bigint, number], LegacyRow>;
  private readonly readLegacyStreamRange: Database.Statement<[string, number, number], LegacyRow>;
  /** The last position of the legacy `events` table (frozen at schema 2): START when it holds none. */
  private readonly legacyEnd: Position;
  private readonly logRows: LogRowReader;
  private readonly head: Database.Statement<[], bigint>;
  private readonly hub: SubscriptionHub;
  private readonly tail = new CommittedTail();
  private readonly clock: Clock;
  private queue: PendingAppend[] = [];
  private flushScheduled = false;
  /** Batches sent and not yet answered, each settled once its callers have been answered. */
  private readonly inFlight = new Set<Promise<void>>();
  private closing: Promise<void> | undefined;
  /** The log's hash chain (hashes written by AppendBatchWriter), read through this connection. */
  readonly chain: EventChain;

  /**
   * Takes a database from openEventStoreDatabase, which sets the pragmas this class relies on,
   * and the committer its writes go through; openSqliteEventStore builds both.
   */
  constructor(
    private readonly db: Database.Database,
    private readonly committer: BatchCommitter,
    options: Pick<SqliteEventStoreOptions, 'clock' | 'pollIntervalMs'> = {},
  ) {
    this.clock = options.clock ?? systemClock;
    // raw(): arrays instead of keyed objects. Compact rows come as numbers (LogRowReader makes the
    // position a bigint): safeIntegers() would make a BigInt of every integer column of every row,
    // which was a good part of a rebuild's garbage. Legacy rows keep exact bigints (safeIntegers()).
    this.readAllPage = db.prepare<[bigint, number], LogRow>(`SELECT ${LOG_COLUMNS} FROM ${LOG_FROM} WHERE l.position > ? ORDER BY l.position LIMIT ?`).raw();
    this.readStreamRange = db
      .prepare<[string, number, number], LogRow>(`SELECT ${LOG_COLUMNS} FROM ${LOG_FROM} WHERE s.name = ? AND l.revision BETWEEN ? AND ? ORDER BY l.revision`)
      .raw();
    this.readLegacyPage = db
      .prepare<[bigint, number], LegacyRow>(`SELECT ${LEGACY_COLUMNS} FROM events WHERE position > ? ORDER BY position LIMIT ?`)
      .raw()
      .safeIntegers();
    this.readLegacyStreamRange = db
      .prepare<[string, number, number], LegacyRow>(`SELECT ${LEGACY_COLUMNS} FROM events WHERE stream_id = ? AND revision BETWEEN ? AND ? ORDER BY revision`)
      .raw()
      .safeIntegers();
    this.legacyEnd = legacyEnd(db);
    this.logRows = new LogRowReader(db);
    this.head = db.prepare<[], bigint>(HEAD_SQL).pluck().safeIntegers();
    this.chain = new SqliteEventChain(db);
    // Subscriptions read what this store just committed from its tail, a short page being fine for
    // them (they read again until a page is empty). Once they have all of it, only another process
    // (the CLI) can have written more, which is what polling is for: the file is asked at most once
    // per poll interval, not after every commit (that empty read was ~3% of the event loop). So
    // another process's events reach a subscription within about two poll intervals, as before
    // within one.
    // The throttle is shared by every subscription of the store, so it also remembers how far the
    // last file read saw: a subscription behind that (another one's read found another process's
    // events) reads at once. Without it, two subscriptions polling in turn (projections and the
    // domain-events publisher) could each keep the other from ever reading the file.
    const pollIntervalMs = options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
    let fileAskedAt = -Infinity;
    let fileSeenUpTo = START;
    // A page after `after`, only the events `accepts` takes decoded from the tail: it holds events
    // this process wrote, in the current schema (upcast leaves them as they are), so their stored
    // header is what a reader sees. `through`: the page's last position, accepted or not.
    const readAccepted = async (options: ReadAllOptions, accepts?: (event: EventHeader) => boolean): Promise<{ events: RecordedEvent[]; through: Position | null }> => {
      const { after, maxCount } = readAllBounds(options);
      const recent = this.tail.after(after, maxCount);
      if (recent && recent.length > 0) return { events: (accepts ? recent.filter(accepts) : recent).map(toRecordedEvent), through: (recent.at(-1) as StoredEvent).position };
      const now = performance.now();
      if (after === this.tail.newest() && after >= fileSeenUpTo && now - fileAskedAt < pollIntervalMs) return { events: [], through: null };
      fileAskedAt = now;
      const page = this.fromFile(after, maxCount);
      const seen = page.at(-1)?.position ?? after;
      if (seen > fileSeenUpTo) fileSeenUpTo = seen;
      return { events: accepts ? page.filter(accepts) : page, through: page.at(-1)?.position ?? null };
    };
    const recentFirst = {
      readAll: async (options: ReadAllOptions): Promise<RecordedEvent[]> => (await readAccepted(options)).events,
      readAccepted,
      headPosition: () => this.headPosition(),
    };
    this.hub = new SubscriptionHub(recentFirst, pollIntervalMs);
  }

  async append<E extends DomainEvent>(
    streamId: string,
    events: ReadonlyArray<EventToAppend<E>>,
    expectedRevision: ExpectedRevision,
  ): Promise<AppendResult> {
    const [result] = await this.enqueue([{ streamId, expected: expectedRevision, events: serializer()(events) }]);
    if (!result) throw new Error('SQLite writer returned no result for the append');
    return result;
  }

  /** One transaction holds every append of a batch: an atomic run is judged and written as one. */
  async appendAtomically(appends: ReadonlyArray<StreamAppend>): Promise<AppendResult[]> {
    assertDistinctStreams(appends);
    const serialize = serializer();
    const requests = appends.map(({ streamId, expected, events }, index): AppendRequest => ({
      streamId,
      expected,
      events: serialize(events),
      ...(index < appends.length - 1 ? { linked: true } : {}),
    }));
    return this.enqueue(requests);
  }

  private enqueue(requests: AppendRequest[]): Promise<AppendResult[]> {
    if (this.closing) return Promise.reject(new Error('SqliteEventStore is closed'));
    return new Promise<AppendResult[]>((resolve, reject) => {
      this.queue.push({ requests, resolve, reject });
      if (this.flushScheduled) return;
      this.flushScheduled = true;
      // setImmediate, not a microtask: callers' continuations (await chains) all run before the
      // flush, so a burst of appends and the appends made in answer to acknowledgements batch up.
      setImmediate(() => {
        this.flushScheduled = false;
        this.flush();
      });
    });
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    const { from, to } = readStreamBounds(options);
    // A stream begun before schema 2 has its first events in `events`, the rest in `log`.
    const legacy = this.legacyEnd > START ? this.readLegacyStreamRange.all(streamId, from, to).map(legacyToRecordedEvent) : [];
    const last = legacy.at(-1);
    const compact = this.readStreamRange.all(streamId, last ? Math.max(from, last.revision + 1) : from, to).map(this.logToRecordedEvent);
    return legacy.length === 0 ? compact : legacy.concat(compact);
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    const { after, maxCount } = readAllBounds(options);
    const recent = this.tail.after(after, maxCount);
    const last = recent?.at(-1);
    if (!recent || !last) return this.fromFile(after, maxCount);
    // What follows the tail's newest event comes from the file.
    const events = recent.map(toRecordedEvent);
    if (events.length < maxCount) events.push(...this.fromFile(last.position, maxCount - events.length));
    return events;
  }

  /** A page of the log as the file holds it; rows become events directly (a rebuild reads millions). */
  private fromFile(after: Position, maxCount: number): RecordedEvent[] {
    if (after >= this.legacyEnd) return this.readAllPage.all(after, maxCount).map(this.logToRecordedEvent);
    const legacy = this.readLegacyPage.all(after, maxCount).map(legacyToRecordedEvent);
    const last = legacy.at(-1);
    if (legacy.length === maxCount || !last) return legacy;
    return legacy.concat(this.readAllPage.all(last.position, maxCount - legacy.length).map(this.logToRecordedEvent));
  }

  /** Decoded rows are upcast (upcast.ts): every reader sees each type in its current schema. */
  private readonly logToRecordedEvent = (row: LogRow): RecordedEvent => upcast(this.logRows.toEvent(row));

  subscribeToAll(options: SubscribeOptions): Subscription {
    if (this.closing) throw new Error('SqliteEventStore is closed');
    return this.hub.subscribe(options);
  }

  async headPosition(): Promise<Position> {
    return this.head.get() ?? 0n;
  }

  /**
   * Resolves once appends can be committed without waiting for the writer thread to start
   * (~0.1-0.3 s after opening), and rejects if it failed to; appends made before simply wait.
   */
  writerReady(): Promise<void> {
    return this.committer.ready();
  }

  /** How many transactions (`batches`) carried how many appends: shows group commit at work. */
  groupCommitStats(): { batches: number; appends: number } {
    const { transactions, appends } = this.committer.stats();
    return { batches: transactions, appends };
  }

  close(): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    // New appends are refused from here on; those already queued are committed (or rejected)
    // before anything closes, never dropped.
    this.flush();
    while (this.inFlight.size > 0) await Promise.all(this.inFlight);
    await this.hub.closeAll();
    // Readers first: the last connection to close checkpoints the WAL into the file, and that
    // one should be the writer thread's, off this event loop.
    this.db.close();
    await this.committer.close();
  }

  /** Sends the queue as one batch. */
  private flush(): void {
    if (this.queue.length === 0) return;
    const batch = this.queue;
    this.queue = [];
    const committed: Promise<void> = this.committer
      .commit(
        batch.flatMap((append) => append.requests),
        this.clock.now().toISOString(),
      )
      .then(
        (committed) => this.settle(batch, committed),
        (error: unknown) => this.settle(batch, { error }),
      )
      .finally(() => this.inFlight.delete(committed));
    this.inFlight.add(committed);
  }

  /**
   * Answers a committed batch. The committer commits batches in the order sent and answers them
   * in that order, so callers learn of their positions in commit order.
   */
  private settle(batch: ReadonlyArray<PendingAppend>, outcome: CommittedBatch | { error: unknown }): void {
    if ('error' in outcome) {
      // The transaction failed as a whole (or its outcome is unknown): every append of it fails.
      for (const append of batch) append.reject(outcome.error);
      return;
    }
    let wroteEvents = false;
    let index = 0;
    for (const append of batch) {
      const verdicts = append.requests.map(() => outcome.verdicts[index++]);
      // An atomic run is refused as a whole, with the error of the append that conflicted.
      const conflict = verdicts.find((verdict) => verdict !== undefined && 'conflict' in verdict);
      if (conflict && 'conflict' in conflict) {
        append.reject(conflict.conflict);
        continue;
      }
      const results = verdicts.flatMap((verdict) => (verdict !== undefined && 'result' in verdict ? [verdict.result] : []));
      if (results.length !== append.requests.length) {
        append.reject(new Error(`SQLite writer returned no verdict for an append of ${batch.length}`));
        continue;
      }
      for (const [at, { events, streamId }] of append.requests.entries()) {
        const { position, nextExpectedRevision } = results[at] as AppendResult;
        wroteEvents ||= events.length > 0;
        // The rows as SQLite now holds them: an append's events are consecutive rows of the transaction.
        let eventPosition = position - BigInt(events.length - 1);
        let revision = nextExpectedRevision - (events.length - 1);
        for (const event of events) {
          this.tail.add({ position: eventPosition, streamId, revision, id: event.id, type: event.type, data: event.data, metadata: event.metadata, recordedAt: outcome.recordedAt });
          eventPosition += 1n;
          revision += 1;
        }
      }
      append.resolve(results);
    }
    // After the commit, never before: a woken subscription reads what it is told about.
    if (wroteEvents) this.hub.notifyAppended();
  }
}

/**
 * Serializes events now, outside the write transaction, so a bad payload fails only its own
 * append. A command's events share one metadata object, across the appends of an atomic run too:
 * one serializer serializes each metadata object once (within one synchronous call, so the
 * object cannot change in between).
 */
function serializer(): (events: ReadonlyArray<EventToAppend>) => AppendRequest['events'] {
  let metadata: EventMetadata | undefined;
  let version = 0;
  let metadataJson = '';
  return (events) =>
    events.map((event) => {
      // Stamped with its type's schema version (upcast.ts): events of one command mostly share
      // one version, so the serialized metadata is still made once per command.
      const typeVersion = currentSchemaVersion(event.type);
      if (event.metadata !== metadata || typeVersion !== version) {
        metadataJson = JSON.stringify({ ...event.metadata, version: typeVersion });
        metadata = event.metadata;
        version = typeVersion;
      }
      return { id: randomUUID(), type: event.type, data: JSON.stringify(event.data), metadata: metadataJson };
    });
}

/** Decoded rows are upcast (upcast.ts): every reader sees each type in its current schema. */
function legacyToRecordedEvent(row: LegacyRow): RecordedEvent {
  return upcast(legacyRowToEvent(row));
}

/** Parsed anew for every reader: no two readers (or a reader and the writer) share an object. */
function toRecordedEvent(stored: StoredEvent): RecordedEvent {
  return upcast({
    position: stored.position,
    streamId: stored.streamId,
    revision: stored.revision,
    id: stored.id,
    type: stored.type,
    data: JSON.parse(stored.data) as Record<string, unknown>,
    metadata: JSON.parse(stored.metadata) as EventMetadata,
    recordedAt: stored.recordedAt,
    [STORED_DATA_JSON]: stored.data,
  });
}
