import type { RecordedEvent } from '../../shared/event-store/EventStore.ts';
import type { Projection } from '../runner/Projection.ts';
import type { EndedSessionDoc } from '../../shared/read-models/EndedSessionDoc.ts';

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
