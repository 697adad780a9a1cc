import type { RecordedEvent } from '../../shared/event-store/EventStore.ts';
import type { Laui } from '../../shared/ids.ts';
import { recordedSchemaVersion, upcast } from '../../shared/event-store/upcast.ts';
import { redactData, redactStreamId } from './redactEvent.ts';

/**
 * One event as served to analysts and auditors (GET /events, its SSE stream, the CLI export and
 * the Kafka `domain-events` topic): the same JSON everywhere, so one consumer reads all four.
 * `position` is the global position (a JSON number: 2^53 events are beyond any deployment).
 */
export interface EventEnvelope {
  position: number;
  stream: string;
  revision: number;
  type: string;
  /** The event's schema version: `metadata.version` when the writer recorded one, else 1. */
  version: number;
  data: unknown;
  metadata: { user_laui: Laui | null; at: string; correlation_id: string; causation_id: string | null };
}

/** The schema version an event was written with; events written before versions existed are 1. */
export const schemaVersionOf = (event: RecordedEvent): number => recordedSchemaVersion(event.metadata);

/**
 * An event in the newest schema of its type, never rewritten in the log. The stores already upcast
 * what they decode (shared/event-store/upcast.ts); applied again here (the identity on a current
 * event) so an event that reaches a reader by another road is served in the same schema.
 */
export const upcastEvent = (event: RecordedEvent): { event: RecordedEvent; version: number } => {
  const current = upcast(event);
  return { event: current, version: schemaVersionOf(current) };
};

/** Upcast, then redact (redactEvent.ts): the only way a recorded event leaves for a reader. */
export const toEnvelope = (recorded: RecordedEvent): EventEnvelope => {
  const { event, version } = upcastEvent(recorded);
  return {
    position: Number(event.position),
    stream: redactStreamId(event.streamId),
    revision: event.revision,
    type: event.type,
    version,
    data: redactData(event.data),
    metadata: {
      user_laui: event.metadata.user_laui,
      at: event.metadata.at,
      correlation_id: event.metadata.correlation_id,
      causation_id: event.metadata.causation_id,
    },
  };
};
