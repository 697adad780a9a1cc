import Router from '@koa/router';
import { metadataFor } from '../../shared/events.ts';
import { principalOf, type AppContext, type AppState } from '../../shared/http/AppState.ts';
import type { Position } from '../../shared/event-store/EventStore.ts';
import type { ReadModelProgress } from '../../shared/read-store/ReadModelProgress.ts';
import { requireObjectBody } from '../../shared/validation/validateRequest.ts';
import { runAction, type RunActionDeps } from './runAction.ts';

export interface ActionRoutesDeps extends RunActionDeps {
  readModels: ReadModelProgress;
  readYourWritesTimeoutMs: number;
}

/** Action endpoint of spec 4.4. */
export const actionRoutes = (deps: ActionRoutesDeps): Router<AppState> => {
  const router = new Router<AppState>({ prefix: '/api/v1/action' });
  const meta = (ctx: AppContext) => metadataFor(principalOf(ctx).laui, deps.clock.now(), ctx.state.correlationId);
  const settle = async (position: Position | null) => {
    if (position !== null) await deps.readModels.waitFor(position, deps.readYourWritesTimeoutMs);
  };

  router.post('/run', async (ctx) => {
    const outcome = await runAction(deps, principalOf(ctx), requireObjectBody(ctx.request.body), meta(ctx), settle);
    // The body is the spec's `{result}`; the run's log session and the action are named in headers.
    ctx.set('X-Session-Id', outcome.sessionId);
    ctx.set('X-Item-Laui', outcome.actionLaui);
    ctx.body = { result: outcome.result };
  });

  return router;
};
