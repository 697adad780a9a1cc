import { detail, json, objectOf, type RouteDocs } from '../../shared/http/routeDocs.ts';
import { eventsQuerySchema } from './eventsQuery.ts';
import { chainQuerySchema } from './chainQuery.ts';

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

const hashText = { type: ['string', 'null'], pattern: '^[0-9a-f]{64}$' } as const;

/** A served event with its place in the hash chain (GET /events). */
const chainedEnvelopeSchema = {
  ...envelopeSchema,
  properties: {
    ...(envelopeSchema as { properties: object }).properties,
    hash: { ...hashText, description: 'SHA-256 (hex) of the JCS of the event as stored (docs/events.md "The hash chain"); null: written before the chain, or a store without one (KurrentDB)' },
    prev_hash: { ...hashText, description: 'The hash this event follows: the previous event\'s, or an anchor; null when `hash` is' },
  },
  required: [...(envelopeSchema as { required: string[] }).required, 'hash', 'prev_hash'],
};

/** An event as stored: neither upcast nor redacted (verifyChain.ts RawEnvelope). */
const rawEnvelopeSchema = objectOf({
  position: { type: 'integer' },
  stream: { type: 'string', description: 'The stream id as stored (credential-named streams unredacted)' },
  revision: { type: 'integer' },
  type: { type: 'string', description: 'The type as written (not upcast)' },
  version: { type: 'integer', description: 'The schema version it was written with' },
  data: { description: 'The data as written: sealed ciphertexts and password hashes included' },
  metadata: { type: 'object', description: 'The metadata as written' },
  hash: hashText,
  prev_hash: hashText,
});

const checkpointSchema = objectOf({
  position: { type: 'integer' },
  hash: { type: 'string', pattern: '^[0-9a-f]{64}$' },
  signed_at: { type: 'string' },
  signature: { type: 'string', description: 'Ed25519 over the UTF-8 of the JCS of {hash, position, signed_at}, base64' },
});

const noChain = detail('The event store keeps no hash chain (KurrentDB)');

const readersOnly = detail('Access denied: administrators and auditors only');

/** The OpenAPI docs of eventRoutes (docs/events.md). */
export const eventDocs: RouteDocs = {
  tag: 'Events',
  description: 'The event log for administrators and auditors: pages and a resumable Server-Sent Events stream (docs/events.md).',
  auth: 'bearer',
  schemas: { EventEnvelope: envelopeSchema, ChainedEventEnvelope: chainedEnvelopeSchema, RawEventEnvelope: rawEnvelopeSchema, SignedCheckpoint: checkpointSchema },
  routes: [
    {
      method: 'GET',
      path: '/api/v1/events',
      summary: 'A page of the event log',
      description: 'Events strictly after `from`, oldest first; `type` is a type prefix (Task matches TaskLeased), `stream` one stream.',
      params: { query: eventsQuerySchema },
      responses: {
        200: json('The page; next_from is where the next one starts', objectOf({ events: { type: 'array', items: chainedEnvelopeSchema }, next_from: { type: 'integer' } })),
        400: detail('`from` is past the end of the log, or (KurrentDB) not the position of an event'),
        403: readersOnly,
      },
    },
    {
      method: 'GET',
      path: '/api/v1/events/chain',
      summary: 'A page of the log as stored, with its hash chain (administrators)',
      description:
        'Events strictly after `from` as the store holds them (neither upcast nor redacted), each with `hash` and `prev_hash`: what `events verify` recomputes. Administrators only: the raw data holds password hashes and sealed ciphertexts.',
      params: { query: chainQuerySchema },
      responses: {
        200: json(
          'The page; next_from is where the next one starts, head the position of the newest event',
          objectOf({ events: { type: 'array', items: rawEnvelopeSchema }, next_from: { type: 'integer' }, head: { type: 'integer' } }),
        ),
        400: detail('`from` is past the end of the log'),
        403: detail('Access denied: administrators only'),
        404: noChain,
      },
    },
    {
      method: 'GET',
      path: '/api/v1/events/checkpoints',
      summary: 'Signed checkpoints of the hash chain',
      description:
        'Every EVENTS_CHECKPOINT_EVERY events the service signs the hash of the event reached with its Ed25519 key. With the public key (here, and to be compared with one obtained another way by its SHA-256), an export verifies offline: `events verify --file F --checkpoints C --public-key K`.',
      params: { query: chainQuerySchema },
      responses: {
        200: json(
          'Checkpoints strictly after position `from`, oldest first, and the key that signed them',
          objectOf({
            algorithm: { type: 'string', enum: ['Ed25519'] },
            public_key: { type: 'string', description: 'PEM (SPKI)' },
            public_key_sha256: { type: 'string', description: 'SHA-256 of the key\'s DER (SPKI), hex' },
            checkpoints: { type: 'array', items: checkpointSchema },
            next_from: { type: 'integer' },
          }),
        ),
        403: readersOnly,
        404: noChain,
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
