import { detail, json, objectOf, type RouteDocs } from '../../shared/http/routeDocs.ts';
import { eventsQuerySchema } from './eventsQuery.ts';

const nullableText = { type: ['string', 'null'] } as const;

/** One event as readers get it (eventEnvelope.ts EventEnvelope). */
const envelopeSchema = objectOf({
  position: { type: 'integer', description: 'The global position: pass it as `from` (or Last-Event-ID) to go on after it' },
  stream: { type: 'string' },
  revision: { type: 'integer' },
  type: { type: 'string' },
  version: { type: 'integer', description: 'The schema version of the event type' },
  data: { type: 'object', description: 'Secrets stay sealed' },
  metadata: objectOf({ user_laui: nullableText, at: { type: 'string' }, correlation_id: { type: 'string' }, causation_id: nullableText }),
});

const readersOnly = detail('Access denied: administrators and auditors only');

/** The OpenAPI docs of eventRoutes (docs/events.md). */
export const eventDocs: RouteDocs = {
  tag: 'Events',
  description: 'The event log for administrators and auditors: pages and a resumable Server-Sent Events stream (docs/events.md).',
  auth: 'bearer',
  schemas: { EventEnvelope: envelopeSchema },
  routes: [
    {
      method: 'GET',
      path: '/api/v1/events',
      summary: 'A page of the event log',
      description: 'Events strictly after `from`, oldest first; `type` is a type prefix (Task matches TaskLeased), `stream` one stream.',
      params: { query: eventsQuerySchema },
      responses: {
        200: json('The page; next_from is where the next one starts', objectOf({ events: { type: 'array', items: envelopeSchema }, next_from: { type: 'integer' } })),
        400: detail('`from` is past the end of the log, or (KurrentDB) not the position of an event'),
        403: readersOnly,
      },
    },
    {
      method: 'GET',
      path: '/api/v1/events/stream',
      summary: 'The event log as Server-Sent Events, live',
      description:
        'Each event is a frame with `id:` its position, `event:` its type and `data:` its envelope (EventEnvelope). Reconnecting with Last-Event-ID resumes after it. A client that reads too slowly is dropped with an `event: dropped` frame.',
      params: { query: eventsQuerySchema, header: { type: 'object', properties: { 'Last-Event-ID': { type: 'string', pattern: '^\\d{1,16}$' } } } },
      responses: {
        200: { description: 'The stream', contentType: 'text/event-stream', schema: { type: 'string' } },
        400: detail('`from` (or Last-Event-ID) is past the end of the log, or (KurrentDB) not the position of an event'),
        403: readersOnly,
        429: detail('Too many open event streams (the user holds EVENTS_STREAMS_PER_USER); Retry-After'),
        503: detail('No event streams free on the server; try again later (EVENTS_STREAMS_MAX); Retry-After'),
      },
    },
  ],
};
