import type { Middleware } from 'koa';
import type { AppState } from '../../shared/http/AppState.ts';
import { UNMATCHED_ROUTE, type RequestObservation } from '../metrics/ServiceMetrics.ts';

/**
 * The route a request is counted under: the template of the router layer that served it
 * (`/api/v1/task/update/:task_laui`, set by @koa/router on the context), /healthz (answered ahead
 * of the routers), else `unmatched`. Never the raw path: paths carry LAUIs, and one series per
 * LAUI would grow without bound.
 */
export const routeLabelOf = (ctx: { path: string; _matchedRoute?: unknown }): string => {
  const matched = ctx._matchedRoute;
  if (typeof matched === 'string') return matched;
  return ctx.path === '/healthz' ? '/healthz' : UNMATCHED_ROUTE;
};

/** Times every request and tells `observe` once it is answered (a request that throws past every handler counts as 500). */
export const requestTimer = (observe: (request: RequestObservation) => void): Middleware<AppState> =>
  async function timeRequest(ctx, next) {
    const started = process.hrtime.bigint();
    let failed = false;
    try {
      await next();
    } catch (error) {
      failed = true;
      throw error;
    } finally {
      observe({
        method: ctx.method,
        route: routeLabelOf(ctx as unknown as { path: string; _matchedRoute?: unknown }),
        status: failed ? 500 : ctx.status,
        seconds: Number(process.hrtime.bigint() - started) / 1e9,
      });
    }
  };
