import Router from '@koa/router';
import { principalOf, type AppState } from '../../shared/http/AppState.ts';
import { requestWrites } from '../../shared/http/requestWrites.ts';
import type { ReadModelProgress } from '../../shared/read-store/ReadModelProgress.ts';
import { requireObjectBody } from '../../shared/validation/validateRequest.ts';
import type { CronScheduler } from './cronScheduler.ts';
import { manageCron, parseManageCronBody } from './manageCron.ts';
import type { CronDeps } from './schedulerCycle.ts';

export interface CronRoutesDeps extends CronDeps {
  scheduler: Pick<CronScheduler, 'wake' | 'settle'>;
  readModels: ReadModelProgress;
  readYourWritesTimeoutMs: number;
}

/** Spec 4.5: POST /api/v1/cron/manage. */
export const cronRoutes = (deps: CronRoutesDeps): Router<AppState> => {
  const router = new Router<AppState>({ prefix: '/api/v1/cron' });
  const { meta, settle } = requestWrites(deps);

  router.post('/manage', async (ctx) => {
    const body = parseManageCronBody(requireObjectBody(ctx.request.body));
    const principal = principalOf(ctx);
    const { message } = await manageCron({ ...deps, settle }, principal, body, meta(ctx));
    ctx.body = { success: true, message, project_laui: body.project_laui, action: body.action };
  });

  return router;
};
