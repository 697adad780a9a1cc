import Router from '@koa/router';
import { principalOf, type AppContext, type AppState } from '../../shared/http/AppState.ts';
import { requestWrites } from '../../shared/http/requestWrites.ts';
import type { ReadModelProgress } from '../../shared/read-store/ReadModelProgress.ts';
import { backfillProgress } from '../../shared/task/backfill/backfillState.ts';
import { lauiSchema, validateRequest } from '../../shared/validation/validateRequest.ts';
import { backfillFor, backfillsOfTask, cancelBackfill, parseBackfillRequest, requestBackfill, type BackfillDeps } from './backfillCommands.ts';

export const LIST_QUERY = { type: 'object', properties: { task_laui: lauiSchema }, required: ['task_laui'] } as const;

export interface BackfillRoutesDeps extends BackfillDeps {
  readModels: ReadModelProgress;
  readYourWritesTimeoutMs: number;
  /** The driver's next pass now (a no-op where this process has no scheduler part). */
  wake(): void;
}

const backfillIdOf = (ctx: AppContext): string => String(ctx.params.backfill_id ?? '');

/**
 * Backfills (issue 36; README: Backfill): POST /task/backfill, GET /task/backfill/{backfill_id},
 * POST /task/backfill/{backfill_id}/cancel, and GET /task/backfill?task_laui= (a task's backfills,
 * newest first: what the console shows). The progress is read from the task's backfill stream
 * itself (small, and exact at once), not from a read model.
 */
export const backfillRoutes = (deps: BackfillRoutesDeps): Router<AppState> => {
  const router = new Router<AppState>({ prefix: '/api/v1/task' });
  const { meta } = requestWrites(deps);

  router.post('/backfill', async (ctx) => {
    const request = parseBackfillRequest(ctx.request.body);
    const { backfillId } = await requestBackfill(deps, principalOf(ctx), request, meta(ctx));
    deps.wake();
    ctx.body = { backfill_id: backfillId };
  });

  router.get('/backfill', async (ctx) => {
    const { task_laui } = validateRequest<{ task_laui: string }>(LIST_QUERY, { ...ctx.query }, 'query');
    ctx.body = { backfills: await backfillsOfTask(deps, principalOf(ctx), task_laui) };
  });

  router.get('/backfill/:backfill_id', async (ctx) => {
    ctx.body = backfillProgress(await backfillFor(deps, principalOf(ctx), backfillIdOf(ctx), 'VIEW'));
  });

  router.post('/backfill/:backfill_id/cancel', async (ctx) => {
    const principal = principalOf(ctx);
    await cancelBackfill(deps, principal, backfillIdOf(ctx), meta(ctx));
    deps.wake();
    ctx.body = backfillProgress(await backfillFor(deps, principal, backfillIdOf(ctx), 'VIEW'));
  });

  return router;
};
