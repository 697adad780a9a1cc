import type { Middleware } from 'koa';
import type { AppState } from '../../shared/http/AppState.ts';

/**
 * The guard of the routes spec 5.1 makes public but that read what users' runs did: the logs
 * routes (and the AI routes when they come). With PUBLIC_ROUTES_REQUIRE_AUTH off (the default,
 * the spec) it lets every request through; on, it is `authenticate` with the access token taken
 * from `Authorization: Bearer` or the `frontend_token` cookie (what a browser holds after login),
 * so a route behind it answers 401 `User not authenticated` without one.
 *
 * A route puts it ahead of its handler (`router.get(path, guard, handler)`) or a router takes it
 * for all of its routes (`router.use(guard)`): the check runs before any response is started, so
 * an SSE route answers a plain 401, never an event stream.
 */
export const publicRouteGuard = (options: { requireAuth: boolean; authenticate: Middleware<AppState> }): Middleware<AppState> => {
  if (options.requireAuth) return options.authenticate;
  return async function publicRoute(_ctx, next) {
    await next();
  };
};
