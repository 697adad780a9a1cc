import Router from '@koa/router';
import { badRequest, forbidden } from '../../shared/errors.ts';
import { UnreadablePositionError, type EventStore } from '../../shared/event-store/EventStore.ts';
import { principalOf, type AppContext, type AppState } from '../../shared/http/AppState.ts';
import { toEnvelope } from './eventEnvelope.ts';
import type { EventStreams } from './EventStreams.ts';
import { parseEventsQuery, resumePosition } from './eventsQuery.ts';
import { assertReadableFrom, readEventsPage } from './readEventsPage.ts';

/** The whole log is for administrators and auditors only: it shows every user's activity. */
const requireEventReader = (ctx: AppContext): void => {
  const principal = principalOf(ctx);
  if (!principal.isAdmin && !principal.isAuditor) throw forbidden();
};

/** A position the store cannot read from is the client's mistake: 400 on every store, never a 500. */
const refusingUnreadable = async <T>(read: () => Promise<T>): Promise<T> => {
  try {
    return await read();
  } catch (error) {
    if (error instanceof UnreadablePositionError) throw badRequest(error.message);
    throw error;
  }
};

/** GET /api/v1/events (pages) and /api/v1/events/stream (Server-Sent Events), see docs/events.md. */
export const eventRoutes = (deps: { eventStore: EventStore; streams: EventStreams }): Router<AppState> => {
  const router = new Router<AppState>();

  router.get('/api/v1/events', async (ctx) => {
    requireEventReader(ctx);
    const query = parseEventsQuery({ ...ctx.query });
    const page = await refusingUnreadable(() => readEventsPage(deps.eventStore, query));
    ctx.set('cache-control', 'no-store');
    ctx.body = { events: page.events.map(toEnvelope), next_from: Number(page.nextFrom) };
  });

  router.get('/api/v1/events/stream', async (ctx) => {
    requireEventReader(ctx);
    const query = parseEventsQuery({ ...ctx.query });
    const after = resumePosition(ctx.get('last-event-id') || undefined, query.from);
    await refusingUnreadable(() => assertReadableFrom(deps.eventStore, after));
    // A user past its share of streams (or a full server) gets a plain 429 (503) from serve, before any stream starts.
    deps.streams.serve(ctx.res, after, query, principalOf(ctx).laui);
    // The response is written by EventStreams from here on, not by Koa.
    ctx.respond = false;
  });

  return router;
};
