import Router from '@koa/router';
import type { Middleware } from 'koa';
import type { AppState } from '../../shared/http/AppState.ts';
import { requestWrites } from '../../shared/http/requestWrites.ts';
import type { ReadModelProgress } from '../../shared/read-store/ReadModelProgress.ts';
import { requireObjectBody } from '../../shared/validation/validateRequest.ts';
import { generate, type GenerateDeps } from './generate.ts';

export interface GenerateRoutesDeps extends GenerateDeps {
  readModels: ReadModelProgress;
  readYourWritesTimeoutMs: number;
  /** PUBLIC_ROUTES_REQUIRE_AUTH's guard (ops/http/publicRouteGuard.ts): public by default (spec 5.1). */
  guard: Middleware<AppState>;
  /** Authenticates a request that carries a token or frontend_token cookie; lets the others through anonymous. */
  optionalAuth: Middleware<AppState>;
}

/**
 * POST /api/v1/ai/generate (spec 4.11). The body is AIResponse (200, or 206 for a partial
 * generation); the generation's session id (the one sent, or a new one) is in `X-Session-Id`, as
 * /action/run names its run's session: its AI module's output is logged there and sending it back
 * continues the session.
 */
export const generateRoutes = (deps: GenerateRoutesDeps): Router<AppState> => {
  const router = new Router<AppState>();
  const { metaFor } = requestWrites(deps);
  router.post('/api/v1/ai/generate', deps.guard, deps.optionalAuth, async (ctx) => {
    // A client that leaves stops the built-in module's call to the provider.
    const abandoned = new AbortController();
    ctx.res.once('close', () => {
      if (!ctx.res.writableFinished) abandoned.abort();
    });
    const caller = ctx.state.principal ?? null;
    const outcome = await generate(deps, caller, requireObjectBody(ctx.request.body), metaFor(ctx, caller?.laui ?? null), abandoned.signal);
    ctx.status = outcome.status;
    ctx.set('X-Session-Id', outcome.sessionId);
    ctx.body = outcome.body;
  });
  return router;
};
