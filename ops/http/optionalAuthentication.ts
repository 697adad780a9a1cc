import type { Middleware } from 'koa';
import type { AppState } from '../../shared/http/AppState.ts';

/**
 * The public AI routes (spec 5.1) with an identity when the caller gives one: a request carrying
 * `Authorization` or the `frontend_token` cookie goes through `authenticate` (a bad token is 401,
 * not an anonymous call), any other goes on anonymous. A principal already set (by the public
 * routes' guard with PUBLIC_ROUTES_REQUIRE_AUTH) is kept.
 */
export const optionalAuthentication = (authenticate: Middleware<AppState>): Middleware<AppState> =>
  async function optionalAuth(ctx, next) {
    if (ctx.state.principal || (!ctx.get('authorization') && !ctx.cookies.get('frontend_token'))) {
      await next();
      return;
    }
    await authenticate(ctx, next);
  };
