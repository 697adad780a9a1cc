import { isoTime } from './clock.ts';
import type { Laui } from './ids.ts';

/** Who caused an event and in answer to what; present on every event we write. */
export interface EventMetadata {
  user_laui: Laui | null;
  correlation_id: string;
  causation_id: string | null;
  at: string;
  /**
   * The schema version of the event's data, stamped by the store when it writes the event
   * (shared/event-store/upcast.ts); absent on events written before versions existed (read as 1).
   */
  version?: number;
}

/** A domain event: past-tense type plus JSON data. Aggregates narrow this to a union. */
export interface DomainEvent<Type extends string = string, Data extends object = Record<string, unknown>> {
  type: Type;
  data: Data;
}

/** What the command side hands to the store. */
export interface EventToAppend<E extends DomainEvent = DomainEvent> {
  type: E['type'];
  data: E['data'];
  metadata: EventMetadata;
}

/** Metadata for a command's events; the correlation id ties the events of one request together. */
export const metadataFor = (user_laui: Laui | null, at: Date, correlation_id: string, causation_id: string | null = null): EventMetadata => ({
  user_laui,
  correlation_id,
  causation_id,
  at: isoTime(at),
});
