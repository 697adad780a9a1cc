import type { Middleware } from 'koa';
import { AppError } from '../../shared/errors.ts';
import type { AppState } from '../../shared/http/AppState.ts';

/**
 * For public routes that act differently for a known caller (the AI routes: access checks on the
 * chat item, tools as that user, the chat history): a request presenting a credential (Bearer, or
 * the frontend_token cookie) goes through `authenticate`, so a bad or expired one is 401 rather
 * than silently anonymous; a request presenting none passes as anonymous. A caller the guard of
 * PUBLIC_ROUTES_REQUIRE_AUTH already authenticated is not verified twice.
 *
 * `badCredential: 'anonymous'` (the logs streams, which only count a caller's streams against its
 * user rather than its address): a credential that does not authenticate, or whose user may not call
 * the route (403), leaves the request anonymous, as the route was before it looked at credentials.
 */
export const optionalCaller = (authenticate: Middleware<AppState>, options: { badCredential?: 'refuse' | 'anonymous' } = {}): Middleware<AppState> =>
  async function identifyCaller(ctx, next) {
    const presents = /^Bearer\s+\S/i.test(ctx.get('authorization')) || ctx.cookies.get('frontend_token') !== undefined;
    if (ctx.state.principal !== undefined || !presents) {
      await next();
      return;
    }
    if (options.badCredential !== 'anonymous') {
      await authenticate(ctx, next);
      return;
    }
    try {
      await authenticate(ctx, () => Promise.resolve());
    } catch (error) {
      // 401 (bad, expired, ended) and 403 (a worker's token, a password still to change): not a caller here.
      if (!(error instanceof AppError && (error.status === 401 || error.status === 403))) throw error;
      ctx.state.principal = undefined;
    }
    await next();
  };
