import Router from '@koa/router';
import { principalOf, type AppState } from '../../shared/http/AppState.ts';
import { requestWrites } from '../../shared/http/requestWrites.ts';
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
  const { meta, settle } = requestWrites(deps);

  router.post('/run', async (ctx) => {
    const outcome = await runAction(deps, principalOf(ctx), requireObjectBody(ctx.request.body), meta(ctx), settle);
    // The body is the spec's `{result}`; the run's log session and the action are named in headers.
    ctx.set('X-Session-Id', outcome.sessionId);
    ctx.set('X-Item-Laui', outcome.actionLaui);
    ctx.body = { result: outcome.result };
  });

  return router;
};
