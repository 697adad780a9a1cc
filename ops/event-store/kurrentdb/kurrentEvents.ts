import { randomUUID } from 'node:crypto';
import {
  START as LOG_START,
  streamNameFilter,
  type Filter,
  type JSONEventData,
  type JSONEventType,
  type ReadPosition,
  type RecordedEvent as KurrentRecordedEvent,
} from '@kurrent/kurrentdb-client';
import { START, type Position, type RecordedEvent } from '../../../shared/event-store/EventStore.ts';
import { stampSchemaVersion, upcast } from '../../../shared/event-store/upcast.ts';
import type { EventMetadata, EventToAppend } from '../../../shared/events.ts';
import { revisionOf } from './kurrentRevisions.ts';

/*
 * Events and positions at the edge of KurrentDB.
 *
 * Our streams are named `prefix + stream id` (the prefix is empty unless one database is shared,
 * as the contract suite shares one server between its tests). The global position is the event's
 * commit position in the transaction log: every event appended outside an explicit transaction
 * (which only the legacy TCP client could open) has its own, with commit = prepare, strictly
 * increasing in log order, which is what a checkpoint needs (the client docs say to store either).
 */

/** The server's "no position" (u64 max), what an event of an explicit transaction reads as from its stream. */
const NO_POSITION = 2n ** 64n - 1n;

const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);

/** The name a stream of ours has in the database. */
export const storedStreamName = (prefix: string, streamId: string): string => `${prefix}${streamId}`;

/** Our stream id for a database stream, or null for a stream that is not ours (a system `$` stream, another prefix). */
export const ourStreamId = (prefix: string, storedName: string): string | null => {
  if (storedName.startsWith('$') || !storedName.startsWith(prefix)) return null;
  return storedName.slice(prefix.length);
};

/**
 * The server-side filter of $all reads and subscriptions: our prefix, or with none every stream but
 * the system ones (`$...`: stats, settings, projection links). One expression is all a filter
 * holds, so events of a `$` type in a stream of ours are left out here instead (ourEventOf).
 */
export const ourStreamsFilter = (prefix: string): Filter => (prefix === '' ? streamNameFilter({ regex: '^[^$]' }) : streamNameFilter({ prefixes: [prefix] }));

/**
 * Where to start reading or subscribing to $all for the events strictly after `after`: the log's
 * start, or the event's own position (commit = prepare). A subscription starts after it (client
 * docs: subscription positions are exclusive); a read may start at it, so readers drop what is not
 * strictly after.
 */
export const readPositionAfter = (after: Position): ReadPosition => (after <= START ? LOG_START : { commit: after, prepare: after });

/**
 * An event as the client sends it: JSON, a fresh id, and the metadata stamped with the type's
 * schema version (upcast.ts), as every adapter writes it.
 */
export const eventDataOf = (event: EventToAppend): JSONEventData => ({
  id: randomUUID(),
  contentType: 'application/json',
  type: event.type,
  // Copied now, through JSON as it will be stored: the client serializes only after awaits of its
  // own, when the caller may have changed the object. Domain data is a JSON object (DomainEvent).
  data: JSON.parse(JSON.stringify(event.data)) as JSONEventType['data'],
  metadata: { ...stampSchemaVersion(event.type, event.metadata) },
});

/** The global position of an event read from the server; an event without one is refused, never given position 0. */
export const positionOf = (event: KurrentRecordedEvent): Position => {
  const commit = event.position?.commit;
  if (commit === undefined || commit === NO_POSITION) {
    throw new Error(
      `KurrentDB reported no log position for event ${event.id} of ${event.streamId} (stream reads carry one from EventStoreDB 22.6 on, and never for events of explicit transactions)`,
    );
  }
  return commit;
};

/**
 * An event of a stream of ours, decoded and raised to its type's current schema (upcast). What is
 * not JSON with an object for data and metadata was not written by this service: refused with
 * its stream and revision, rather than handed to a fold as something it is not.
 */
export const recordedEventOf = (event: KurrentRecordedEvent, streamId: string): RecordedEvent => {
  if (!event.isJson || !isPlainObject(event.data) || !isPlainObject(event.metadata)) {
    throw new Error(`Event ${event.id} at revision ${event.revision} of ${event.streamId} is not an event of this service (JSON object data and metadata)`);
  }
  return upcast({
    id: event.id,
    streamId,
    revision: revisionOf(event.revision),
    position: positionOf(event),
    type: event.type,
    data: event.data,
    metadata: event.metadata as unknown as EventMetadata,
    recordedAt: event.created.toISOString(),
  });
};

/**
 * The event of a read or subscription result if it is one of ours, else null: an unresolved link,
 * a system stream or another prefix's stream, an event of a system (`$`) type.
 */
export const ourEventOf = (resolved: { event?: KurrentRecordedEvent }, prefix: string): RecordedEvent | null => {
  const { event } = resolved;
  const streamId = event ? ourEventStreamId(event, prefix) : null;
  return event && streamId !== null ? recordedEventOf(event, streamId) : null;
};

/** Our stream id of a database event if it is one of ours (in a stream of ours, of a type that is not a system `$` one), else null. */
export const ourEventStreamId = (event: KurrentRecordedEvent, prefix: string): string | null => (event.type.startsWith('$') ? null : ourStreamId(prefix, event.streamId));
