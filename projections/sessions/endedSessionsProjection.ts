import type { RecordedEvent } from '../../shared/event-store/EventStore.ts';
import type { Projection } from '../runner/Projection.ts';

/**
 * Ended login sessions by sid: what the auth middleware consults on every request that carries a
 * sid, one keyed lookup. Rebuilt from the log like every read model, so a logout holds across restarts.
 */
export interface EndedSessionDoc {
  [field: string]: unknown;
  id: string;
  user_laui: string | null;
  ended_at: string;
}

export const ENDED_SESSIONS = 'ended_sessions';

export const endedSessionsProjection: Projection<EndedSessionDoc> = {
  name: 'ended_sessions',
  collection: ENDED_SESSIONS,
  indexes: [],
  handles: new Set(['SessionEnded']),
  documentId: (event: RecordedEvent) => (event.streamId.startsWith('session-') ? event.streamId.slice('session-'.length) : null),
  evolve: (doc, event) => {
    if (doc) return doc;
    const data = event.data as { user_laui?: unknown };
    return { id: event.streamId.slice('session-'.length), user_laui: typeof data.user_laui === 'string' ? data.user_laui : null, ended_at: event.metadata.at };
  },
};
