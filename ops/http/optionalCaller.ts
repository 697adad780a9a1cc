import type { Middleware } from 'koa';
import type { AppState } from '../../shared/http/AppState.ts';

/**
 * For public routes that act differently for a known caller (the AI routes: access checks on the
 * chat item, tools as that user, the chat history): a request presenting a credential (Bearer, or
 * the frontend_token cookie) goes through `authenticate`, so a bad or expired one is 401 rather
 * than silently anonymous; a request presenting none passes as anonymous. A caller the guard of
 * PUBLIC_ROUTES_REQUIRE_AUTH already authenticated is not verified twice.
 */
export const optionalCaller = (authenticate: Middleware<AppState>): Middleware<AppState> =>
  async function identifyCaller(ctx, next) {
    const presents = /^Bearer\s+\S/i.test(ctx.get('authorization')) || ctx.cookies.get('frontend_token') !== undefined;
    if (ctx.state.principal !== undefined || !presents) {
      await next();
      return;
    }
    await authenticate(ctx, next);
  };
