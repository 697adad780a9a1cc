import {
  BACKWARDS,
  END,
  ErrorType,
  FORWARDS,
  isCommandError,
  KurrentDBClient,
  START as LOG_START,
  type Direction,
  type Filter,
  type RecordedEvent as KurrentRecordedEvent,
} from '@kurrent/kurrentdb-client';
import {
  UnreadablePositionError,
  WrongExpectedVersionError,
  START,
  type AppendResult,
  type EventStore,
  type ExpectedRevision,
  type Position,
  type ReadAllOptions,
  type ReadStreamOptions,
  type RecordedEvent,
  type SubscribeOptions,
  type Subscription,
} from '../../../shared/event-store/EventStore.ts';
import type { DomainEvent, EventToAppend } from '../../../shared/events.ts';
import { checkExpectedRevision } from '../checkExpectedRevision.ts';
import { OpenSubscriptions } from '../OpenSubscriptions.ts';
import { readAllBounds, readStreamBounds } from '../readBounds.ts';
import { catchUpSubscription, DEFAULT_RESUBSCRIBE, type ResubscribeSettings, type ServerSubscription } from './catchUpSubscription.ts';
import { eventDataOf, ourEventOf, ourEventStreamId, ourStreamsFilter, positionOf, readPositionAfter, recordedEventOf, storedStreamName } from './kurrentEvents.ts';
import { conflictOf, isRevision, revisionOf, revisionRange, streamStateOf } from './kurrentRevisions.ts';
import { maskCredentials } from './maskCredentials.ts';

export interface KurrentEventStoreOptions {
  /**
   * The client's connection string: `kurrentdb://[user:password@]host:2113[?tls=false]`, several
   * hosts or `kurrentdb+discover://` for a cluster (the legacy `esdb://` is read too).
   */
  connectionString: string;
  /**
   * Put before every stream name; reads of $all and subscriptions see only the streams that have
   * it. Empty by default: the database is this service's. For sharing one database (the contract
   * suite gives each test its own prefix on one server).
   */
  streamPrefix?: string;
  /** How dropped subscriptions are opened again (catchUpSubscription.ts). */
  resubscribe?: ResubscribeSettings;
}

/** The part of the client the store uses: a model of it stands in for a server in unit specs. */
export type KurrentClient = Pick<KurrentDBClient, 'appendToStream' | 'readStream' | 'readAll' | 'subscribeToAll' | 'dispose'>;

/** $all is read in pages of this many when looking for the newest event of ours. */
const HEAD_PAGE = 32;

/**
 * Opens the store and reads the head once, so that a wrong address, TLS setting or credential
 * fails here, at start, with the client's reason (the password masked), not at the first command.
 */
export async function openKurrentEventStore(options: KurrentEventStoreOptions): Promise<KurrentEventStore> {
  const streamPrefix = options.streamPrefix ?? '';
  if (streamPrefix.startsWith('$')) throw new Error(`KurrentDB stream prefix "${streamPrefix}" would name system streams ($...)`);
  const client = clientFor(options.connectionString);
  if (typeof client === 'string') throw new Error(`Not a KurrentDB connection string (kurrentdb://[user:password@]host:2113[?tls=false]): ${client}`);
  const store = new KurrentEventStore(client, { streamPrefix, resubscribe: options.resubscribe ?? DEFAULT_RESUBSCRIBE });
  try {
    await store.headPosition();
  } catch (error) {
    await client.dispose().catch(() => {});
    throw new Error(`KurrentDB did not answer a first read of $all (${reasonOf(error)}): check the address, port, tls= and credentials of the connection string`, {
      cause: error,
    });
  }
  return store;
}

/** An error's message for ours, any password in it masked. */
const reasonOf = (error: unknown): string => maskCredentials(error instanceof Error ? error.message : String(error));

/**
 * The client, or why the connection string is not one. Only the masked message leaves: the
 * client's parse error carries the whole string, password included, and is not passed on as a cause.
 */
const clientFor = (connectionString: string): KurrentDBClient | string => {
  try {
    return KurrentDBClient.connectionString(connectionString);
  } catch (error) {
    return reasonOf(error);
  }
};

/** A client error that is the connection's or the server's (gRPC), worth subscribing again for; not one of decoding. */
const isServerError = (error: unknown): boolean => error instanceof Error && (isCommandError(error) || typeof (error as { code?: unknown }).code === 'number');

/**
 * The server's refusal of a read position that is not an event's record (a made-up `from`): its
 * answer is an invalid-argument or an unknown error naming the position, depending on the version
 * (KurrentDB 23.10 made the message say so). Only ever asked about the caller's own first position.
 */
const isInvalidPosition = (error: unknown): boolean =>
  error instanceof Error &&
  isCommandError(error) &&
  (error.type === ErrorType.INVALID_ARGUMENT || error.type === ErrorType.UNKNOWN) &&
  /position|ReadAllResult/i.test(error.message);

const isStreamNotFound = (error: unknown): boolean => error instanceof Error && isCommandError(error) && error.type === ErrorType.STREAM_NOT_FOUND;

/**
 * The distributed event store: EventStoreDB / KurrentDB through its gRPC client. A thin edge: our
 * expected revisions, positions, events and conflicts are mapped to the client's own types
 * (kurrentRevisions.ts, kurrentEvents.ts) and the server does the rest.
 *
 * No appendAtomically: the server's transactions across streams (multiStreamAppend, KurrentDB 25.1)
 * take string-valued metadata only and report one position for the whole write, so
 * command-side/kernel/commit.ts appends one stream at a time, in the order it documents.
 */
export class KurrentEventStore implements EventStore {
  private readonly prefix: string;
  private readonly filter: Filter;
  private readonly resubscribe: ResubscribeSettings;
  private readonly subscriptions = new OpenSubscriptions();
  /** Appends sent and not yet answered: close() lets them finish before the connection goes. */
  private readonly inFlight = new Set<Promise<unknown>>();
  private closing: Promise<void> | undefined;

  constructor(
    private readonly client: KurrentClient,
    options: { streamPrefix: string; resubscribe: ResubscribeSettings },
  ) {
    this.prefix = options.streamPrefix;
    this.filter = ourStreamsFilter(this.prefix);
    this.resubscribe = options.resubscribe;
  }

  append<E extends DomainEvent>(streamId: string, events: ReadonlyArray<EventToAppend<E>>, expectedRevision: ExpectedRevision): Promise<AppendResult> {
    if (this.closing) return Promise.reject(new Error('KurrentEventStore is closed'));
    const appended = this.write(streamId, events, expectedRevision);
    this.inFlight.add(appended);
    void appended.finally(() => this.inFlight.delete(appended)).catch(() => {});
    return appended;
  }

  private async write(streamId: string, events: ReadonlyArray<EventToAppend>, expected: ExpectedRevision): Promise<AppendResult> {
    // Nothing to write, or a revision no stream can be at: judged here, as the other stores do,
    // against the stream's last revision (the server has no empty append to report a position for).
    if (events.length === 0 || (typeof expected === 'number' && !isRevision(expected))) {
      const last = checkExpectedRevision(streamId, expected, await this.lastRevision(streamId));
      return { nextExpectedRevision: last, position: await this.headPosition() };
    }
    const data = events.map(eventDataOf);
    try {
      const result = await this.client.appendToStream(storedStreamName(this.prefix, streamId), data, { streamState: streamStateOf(expected) });
      // Only with throwOnAppendFailure=false in the connection string does a conflict come back as a result.
      if (!result.success) throw new WrongExpectedVersionError(streamId, expected, result.nextExpectedRevision < 0n ? 'no_stream' : revisionOf(result.nextExpectedRevision));
      // The position of the append's last event (its commit position).
      const position = result.position?.commit;
      if (position === undefined) throw new Error(`KurrentDB acknowledged an append to ${streamId} without its log position`);
      return { nextExpectedRevision: revisionOf(result.nextExpectedRevision), position };
    } catch (error) {
      throw conflictOf(error, streamId, expected) ?? error;
    }
  }

  /** The revision of a stream's last event, read backwards from its end. */
  private async lastRevision(streamId: string): Promise<number | 'no_stream'> {
    try {
      for await (const { event } of this.client.readStream(storedStreamName(this.prefix, streamId), { direction: BACKWARDS, fromRevision: END, maxCount: 1 })) {
        if (event) return revisionOf(event.revision);
      }
    } catch (error) {
      if (!isStreamNotFound(error)) throw error;
    }
    return 'no_stream';
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    const range = revisionRange(readStreamBounds(options));
    if (!range) return [];
    const events: RecordedEvent[] = [];
    try {
      for await (const { event } of this.client.readStream(storedStreamName(this.prefix, streamId), { direction: FORWARDS, ...range })) {
        if (event) events.push(recordedEventOf(event, streamId));
      }
    } catch (error) {
      if (isStreamNotFound(error)) return [];
      throw error;
    }
    return events;
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    const { after, maxCount } = readAllBounds(options);
    const events: RecordedEvent[] = [];
    if (maxCount === 0) return events;
    await this.scanAll(FORWARDS, after, maxCount, (event) => {
      const ours = ourEventOf({ event }, this.prefix);
      if (ours) events.push(ours);
      return events.length < maxCount;
    });
    return events;
  }

  async headPosition(): Promise<Position> {
    let head = START;
    await this.scanAll(BACKWARDS, null, HEAD_PAGE, (event, position) => {
      if (ourEventStreamId(event, this.prefix) === null) return true;
      head = position;
      return false;
    });
    return head;
  }

  /**
   * Reads $all (our streams, filtered by the server) in `direction` from beyond `from` (null: from
   * the log's start or end), each event once, in pages of `pageSize`, until `visit` returns false
   * or the log ends. The client reads a page from a position inclusively, hence one more event
   * than wanted when starting at one; a page that comes back short is the end of the log.
   */
  private async scanAll(direction: Direction, from: Position | null, pageSize: number, visit: (event: KurrentRecordedEvent, position: Position) => boolean): Promise<void> {
    let cursor = from !== null && from > START ? from : null;
    for (;;) {
      const want = pageSize + (cursor === null ? 0 : 1);
      const fromPosition = cursor !== null ? readPositionAfter(cursor) : direction === FORWARDS ? LOG_START : END;
      let seen = 0;
      let advanced = false;
      const callersPosition = cursor !== null && cursor === from;
      try {
        for await (const { event } of this.client.readAll({ direction, fromPosition, maxCount: want, filter: this.filter })) {
          seen += 1;
          if (!event) continue;
          const position = positionOf(event);
          if (cursor !== null && (direction === FORWARDS ? position <= cursor : position >= cursor)) continue;
          cursor = position;
          advanced = true;
          if (!visit(event, position)) return;
        }
      } catch (error) {
        // Later pages start at positions the server gave: only the caller's own can be made up.
        if (callersPosition && seen === 0 && from !== null && isInvalidPosition(error)) throw new UnreadablePositionError(from, 'not the position of an event');
        throw error;
      }
      if (seen < want || !advanced) return;
    }
  }

  subscribeToAll(options: SubscribeOptions): Subscription {
    this.assertOpen();
    const source = { head: () => this.headPosition(), open: (after: Position) => this.serverSubscription(after), retryable: isServerError };
    return this.subscriptions.track(catchUpSubscription(source, options, this.resubscribe));
  }

  /** The server's catch-up subscription to our streams after `after` (exclusive), events decoded. */
  private serverSubscription(after: Position): ServerSubscription {
    const subscription = this.client.subscribeToAll({ fromPosition: readPositionAfter(after), filter: this.filter });
    // Errors reach the loop through the iteration. This listener keeps one emitted once nothing
    // iterates any more (the cancellation close() causes) from being an uncaught 'error' event.
    subscription.on('error', () => {});
    const prefix = this.prefix;
    const events = async function* (): AsyncGenerator<RecordedEvent | null> {
      for await (const resolved of subscription) yield ourEventOf(resolved, prefix);
    };
    let closing: Promise<void> | undefined;
    return {
      [Symbol.asyncIterator]: () => events(),
      close: () =>
        (closing ??= (async () => {
          // destroy() ends an iteration waiting for the next event; unsubscribe() cancels the call.
          subscription.destroy();
          await subscription.unsubscribe().catch(() => {});
        })()),
    };
  }

  close(): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    await this.subscriptions.closeAll();
    await Promise.allSettled([...this.inFlight]);
    await this.client.dispose();
  }

  private assertOpen(): void {
    if (this.closing) throw new Error('KurrentEventStore is closed');
  }
}
