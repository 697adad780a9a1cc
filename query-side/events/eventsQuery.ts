import { unprocessable } from '../../shared/errors.ts';
import type { Position } from '../../shared/event-store/EventStore.ts';
import { validateRequest } from '../../shared/validation/validateRequest.ts';

/** Which events a reader wants: a type prefix (`Task` matches `TaskLeased`) and/or one stream. */
export interface EventFilter {
  type?: string;
  stream?: string;
}

export interface EventsQuery extends EventFilter {
  /** Exclusive: events strictly after this global position. */
  from: Position;
  limit: number;
}

export const MAX_EVENTS_PAGE = 1000;
export const DEFAULT_EVENTS_PAGE = 100;

export const eventsQuerySchema = {
  type: 'object',
  properties: {
    from: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
    limit: { type: 'integer', minimum: 1, maximum: MAX_EVENTS_PAGE, default: DEFAULT_EVENTS_PAGE },
    type: { type: 'string', minLength: 1, maxLength: 200 },
    stream: { type: 'string', minLength: 1, maxLength: 300 },
  },
} as const;

const INTEGER = /^-?\d+$/;

/** Query strings arrive as text (a repeated parameter as a list: its last value counts). */
export const coerceQuery = (raw: Record<string, unknown>): Record<string, unknown> => {
  const result: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) {
    const text = Array.isArray(value) ? value.at(-1) : value;
    result[key] = (key === 'from' || key === 'limit') && typeof text === 'string' && INTEGER.test(text) ? Number(text) : text;
  }
  return result;
};

/** GET /events and /events/stream query; 422 in the list form for any bad value. */
export const parseEventsQuery = (raw: Record<string, unknown>): EventsQuery => {
  const query = validateRequest<{ from?: number; limit: number; type?: string; stream?: string }>(eventsQuerySchema, coerceQuery(raw), 'query');
  return {
    from: BigInt(query.from ?? 0),
    limit: query.limit,
    ...(query.type === undefined ? {} : { type: query.type }),
    ...(query.stream === undefined ? {} : { stream: query.stream }),
  };
};

/**
 * The SSE resume point: `Last-Event-ID` (what a reconnecting EventSource sends: the last `id:` it
 * saw) wins over `from`. Anything but a non-negative integer is a 422, never a silent restart.
 */
export const resumePosition = (lastEventId: string | undefined, from: Position): Position => {
  if (lastEventId === undefined || lastEventId === '') return from;
  const text = lastEventId.trim();
  if (!/^\d{1,16}$/.test(text) || Number(text) > Number.MAX_SAFE_INTEGER) {
    throw unprocessable([
      { type: 'int_parsing', loc: ['header', 'last-event-id'], msg: 'Input should be a valid integer, unable to parse string as an integer', input: lastEventId },
    ]);
  }
  return BigInt(text);
};
