import type { Middleware } from 'koa';
import Router from '@koa/router';
import type { AppState } from '../../shared/http/AppState.ts';
import type { LogQueries } from './queryLogs.ts';

export const LOGS_QUERY_PATH = '/api/v1/logs/query';

/**
 * POST /api/v1/logs/query (spec 4.9): every failure is HTTP 200 `{error}`, as the spec says of log
 * queries. That includes a body the parser refused (not JSON, too large, too deep): the app defers
 * those to this route (AppParts.bodyErrorRoutes) instead of answering 422/413 `{detail}`. A client
 * that leaves before the answer interrupts its query.
 */
export const logsQueryRoutes = (deps: {
  queries: LogQueries;
  /** PUBLIC_ROUTES_REQUIRE_AUTH's guard (ops/http/publicRouteGuard.ts): the logs routes are public only by choice. */
  guard: Middleware<AppState>;
  /** Writes the lines the logger still holds (it writes in batches), so that a query sees every line logged before it. */
  flushLogs(): Promise<void>;
}): Router<AppState> => {
  const router = new Router<AppState>();
  router.post(LOGS_QUERY_PATH, deps.guard, async (ctx) => {
    const gone = new AbortController();
    const onClose = () => {
      if (!ctx.res.writableFinished) gone.abort();
    };
    ctx.res.once('close', onClose);
    try {
      const refused = ctx.state.bodyError;
      if (refused === undefined) await deps.flushLogs();
      ctx.body = refused === undefined ? await deps.queries.query(ctx.request.body, gone.signal) : { error: refused };
    } finally {
      ctx.res.off('close', onClose);
    }
    ctx.status = 200;
    ctx.set('cache-control', 'no-store');
  });
  return router;
};
