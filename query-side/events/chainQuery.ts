import { validateRequest } from '../../shared/validation/validateRequest.ts';
import type { Position } from '../../shared/event-store/EventStore.ts';
import { coerceQuery, DEFAULT_EVENTS_PAGE, MAX_EVENTS_PAGE } from './eventsQuery.ts';

/** GET /api/v1/events/chain and /checkpoints: `from` (exclusive) and `limit`, as GET /events takes them; no filter. */
export const chainQuerySchema = {
  type: 'object',
  properties: {
    from: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
    limit: { type: 'integer', minimum: 1, maximum: MAX_EVENTS_PAGE, default: DEFAULT_EVENTS_PAGE },
  },
} as const;

/** 422 in the list form for any bad value, as GET /events answers it. */
export const parseChainQuery = (raw: Record<string, unknown>): { from: Position; limit: number } => {
  const query = validateRequest<{ from?: number; limit: number }>(chainQuerySchema, coerceQuery(raw), 'query');
  return { from: BigInt(query.from ?? 0), limit: query.limit };
};
