import Router from '@koa/router';
import { principalOf, type AppState } from '../../shared/http/AppState.ts';
import type { Clock } from '../../shared/clock.ts';
import type { Collection } from '../../shared/read-store/ReadStore.ts';
import { lauiSchema, validateRequest } from '../../shared/validation/validateRequest.ts';
import type { AccessControl } from '../../projections/catalog/accessControl.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import type { CronLiveness } from '../../projections/cron/cronLiveness.ts';
import { cronViewOf } from './cronView.ts';
import { loadSystemSettings } from '../../shared/task/loadSystemSettings.ts';

export interface CronStatusDeps {
  items: Collection<ItemDoc>;
  access: AccessControl;
  clock: Clock;
  liveness: CronLiveness;
}

export const CRON_STATUS_PATH = { type: 'object', properties: { project_laui: lauiSchema }, required: ['project_laui'] } as const;

/**
 * GET /api/v1/cron/status/{project_laui} (beyond the spec): the project's cron with its live
 * heartbeat. The catalog shows the heartbeat persisted with the last status change; the per-cycle
 * beats are ephemeral (docs/decisions.md), and this is where clients read them. VIEW on the project.
 */
export const cronStatusRoutes = (deps: CronStatusDeps): Router<AppState> => {
  const router = new Router<AppState>({ prefix: '/api/v1/cron' });
  router.get('/status/:project_laui', async (ctx) => {
    const { project_laui } = validateRequest<{ project_laui: string }>(CRON_STATUS_PATH, { project_laui: ctx.params.project_laui }, 'path');
    const project = await deps.access.require(principalOf(ctx), project_laui, 'VIEW');
    ctx.body = await cronViewOf({ liveness: deps.liveness, now: deps.clock.now(), settings: await loadSystemSettings(deps) }, project);
  });
  return router;
};
