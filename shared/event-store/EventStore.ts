import type { DomainEvent, EventMetadata, EventToAppend } from '../events.ts';

/**
 * Expected revision of a stream before an append, mapped to each store at its edge:
 * - 'any': no check;
 * - 'no_stream': the stream must not exist (used for reservations and creations);
 * - 'stream_exists': the stream must have at least one event;
 * - a number: the revision (0-based index) of the stream's last event.
 */
export type ExpectedRevision = 'any' | 'no_stream' | 'stream_exists' | number;

/**
 * Global position in the log. bigint because EventStoreDB commit positions are 64-bit;
 * SQLite rowids and in-memory counters fit in it too.
 */
export type Position = bigint;

export const START: Position = 0n;

/**
 * The JSON text a store decoded an event's data from, when it has it (SQLite). The text is what
 * JSON.stringify made of the data when it was written, so it is JSON.stringify of the decoded
 * object too: a reader that serves the data unchanged (the event stream) writes it as it is
 * instead of serializing it again. Valid only for the very object decoded from it: compare
 * `data` by identity before using it (an upcast or a redaction makes a new object).
 */
export const STORED_DATA_JSON: unique symbol = Symbol('storedDataJson');

export interface RecordedEvent<E extends DomainEvent = DomainEvent> {
  id: string;
  streamId: string;
  /** 0-based index of this event within its stream. */
  revision: number;
  /** Position in the global log; strictly increasing in commit order. */
  position: Position;
  type: E['type'];
  data: E['data'];
  metadata: EventMetadata;
  recordedAt: string;
  /** See STORED_DATA_JSON: the text `data` was decoded from (stores that decode JSON text). */
  [STORED_DATA_JSON]?: string;
}

export interface AppendResult {
  /** Revision of the last event written: the expected revision of the next append. */
  nextExpectedRevision: number;
  /** Position of the last event written: what a reader waits for to see this write. */
  position: Position;
}

/** One stream's part of an atomic append (appendAtomically). */
export interface StreamAppend<E extends DomainEvent = DomainEvent> {
  streamId: string;
  events: ReadonlyArray<EventToAppend<E>>;
  expected: ExpectedRevision;
}

export interface ReadStreamOptions {
  fromRevision?: number;
  /** Inclusive upper bound: fold a stream "as of" a revision. */
  toRevision?: number;
}

export interface ReadAllOptions {
  /** Exclusive: events strictly after this position. */
  after?: Position;
  maxCount?: number;
}

export interface Subscription {
  close(): Promise<void>;
}

/** What a subscription can judge an event by before the event is decoded. */
export type EventHeader = Pick<RecordedEvent, 'position' | 'streamId' | 'type'>;

export interface SubscribeOptions {
  /** Exclusive: deliver events strictly after this position (START for everything). */
  after: Position;
  /**
   * Which events to deliver, judged on position, stream and type (as read, in the current schema):
   * the others are passed over, not delivered, and a store that can tell them before decoding them
   * does not decode them (SQLite's recent commits). Absent: every event. For a subscriber that acts
   * on few events (a signer every N positions, the revocations of reuse processes): each committed
   * event was decoded again for each of them.
   */
  accepts?(event: EventHeader): boolean;
  /** Called for each event in log order; the next event waits for the returned promise. */
  onEvent(event: RecordedEvent): Promise<void> | void;
  /** Called once when the catch-up phase has reached the head seen at subscription time. */
  onCaughtUp?(position: Position): void;
  onError?(error: unknown): void;
}

export interface EventStore {
  append<E extends DomainEvent>(
    streamId: string,
    events: ReadonlyArray<EventToAppend<E>>,
    expectedRevision: ExpectedRevision,
  ): Promise<AppendResult>;
  /**
   * Appends to several distinct streams as one commit: every expected revision holds and all are
   * written, or none is and the first failing one's WrongExpectedVersionError is thrown. Results
   * are at the index of their append. Only stores with multi-stream transactions offer it (SQLite,
   * memory; EventStoreDB has none): only the kernel's commit() (command-side/kernel/commit.ts) asks,
   * and appends one stream at a time in the same order where it is absent.
   */
  appendAtomically?(appends: ReadonlyArray<StreamAppend>): Promise<AppendResult[]>;
  /** Events of one stream in order; an empty array when the stream does not exist. */
  readStream(streamId: string, options?: ReadStreamOptions): Promise<RecordedEvent[]>;
  /** A page of the global log in position order. */
  readAll(options?: ReadAllOptions): Promise<RecordedEvent[]>;
  /** Catch-up subscription: history after `after`, then live events, never a gap nor a repeat. */
  subscribeToAll(options: SubscribeOptions): Subscription;
  /** Position of the newest event, START when the log is empty. */
  headPosition(): Promise<Position>;
  close(): Promise<void>;
}

/** An append whose expected revision did not hold. Carries the actual revision for the caller. */
export class WrongExpectedVersionError extends Error {
  constructor(
    readonly streamId: string,
    readonly expected: ExpectedRevision,
    /** Revision of the stream's last event, or 'no_stream' when it has none. */
    readonly actual: number | 'no_stream',
  ) {
    super(`Wrong expected revision on ${streamId}: expected ${String(expected)}, actual ${String(actual)}`);
    this.name = 'WrongExpectedVersionError';
  }
}

/**
 * A position the store cannot read from: past the end of the log (every store), or between two
 * events' records (KurrentDB, whose positions are byte offsets). The API answers 400 for it.
 */
export class UnreadablePositionError extends Error {
  constructor(
    readonly position: Position,
    reason: string,
  ) {
    super(`The log cannot be read from position ${String(position)}: ${reason}`);
    this.name = 'UnreadablePositionError';
  }
}

/** The one rule every adapter applies, so that they cannot disagree on it. */
export const expectedRevisionHolds = (expected: ExpectedRevision, actual: number | 'no_stream'): boolean => {
  if (expected === 'any') return true;
  if (expected === 'no_stream') return actual === 'no_stream';
  if (expected === 'stream_exists') return actual !== 'no_stream';
  return actual === expected;
};
