import type { RecordedEvent } from '../../shared/event-store/EventStore.ts';
import type { Doc, IndexSpec } from '../../shared/read-store/ReadStore.ts';

/**
 * A read model: which events it handles, which document each event touches, and a pure
 * `evolve(doc | null, event) -> doc | null` (null deletes). The runner owns I/O and idempotency.
 */
export interface Projection<D extends Doc = Doc> {
  name: string;
  collection: string;
  indexes: ReadonlyArray<IndexSpec>;
  handles: ReadonlySet<string>;
  documentId(event: RecordedEvent): string | null;
  evolve(doc: D | null, event: RecordedEvent): D | null;
}

/** Stored on each document: the global position of the last event applied, for idempotency. */
export const APPLIED_POSITION = '_position';
