import Router from '@koa/router';
import { forbidden, notFound } from '../../shared/errors.ts';
import { metadataFor, type EventMetadata } from '../../shared/events.ts';
import { principalOf, type AppState } from '../../shared/http/AppState.ts';
import type { Laui } from '../../shared/ids.ts';
import type { Clock } from '../../shared/clock.ts';
import type { Collection } from '../../shared/read-store/ReadStore.ts';
import { referencedItems, type ReferencedItem } from '../../shared/task/validateTask.ts';
import { lauiSchema, validateRequest } from '../../shared/validation/validateRequest.ts';
import type { AccessControl } from '../../projections/catalog/accessControl.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import type { CronLiveness } from '../../projections/cron/cronLiveness.ts';
import { cronViewOf } from './cronView.ts';
import { loadSystemSettings } from '../../shared/task/loadSystemSettings.ts';
import { diagnoseTask, type BackfillSummary, type CheckResult } from './diagnoseTask.ts';
import type { SlotWait } from '../../shared/task/SlotWait.ts';
import { workflowStateOf } from './readyToRunRoutes.ts';

/** Where diagnoses are kept (the command side's diagnosis journal; wired in ops). */
export interface DiagnosisHistory {
  record(taskLaui: Laui, checks: Record<string, CheckResult>, metadata: EventMetadata): Promise<void>;
  history(taskLaui: Laui): Promise<unknown[]>;
}

export interface DiagnoseDeps {
  items: Collection<ItemDoc>;
  access: AccessControl;
  clock: Clock;
  liveness: CronLiveness;
  journal: DiagnosisHistory;
  /** Worker liveness of this process: the in-memory task heartbeats and whether execute_task has consumers. */
  workers: { heartbeat(taskLaui: Laui): Date | null; running(): boolean; broker: string; slotWait?(taskLaui: Laui): SlotWait | null };
  /** The task's backfill not completed yet (issue 36). */
  backfillOf?(taskLaui: Laui): Promise<BackfillSummary | null>;
}

export const DIAGNOSE_PATH = { type: 'object', properties: { task_laui: lauiSchema }, required: ['task_laui'] } as const;

export const DIAGNOSE_QUERY = {
  type: 'object',
  properties: { history: { type: 'string', enum: ['true', 'false'] } },
} as const;

/**
 * GET /api/v1/task/diagnose/{task_laui} (spec 4.2): 404 `Item not found` for a missing task (or a
 * non-task); VIEW on the task (beyond the spec's list: a diagnosis shows the task's state and is
 * recorded, so strangers get 403 `Access denied`). 200 the checks (diagnoseTask). Each result goes to
 * the task's diagnosis history; `?history=true` answers that history instead (oldest first) and
 * records nothing.
 */
export const diagnoseRoutes = (deps: DiagnoseDeps): Router<AppState> => {
  const router = new Router<AppState>({ prefix: '/api/v1/task' });
  router.get('/diagnose/:task_laui', async (ctx) => {
    const { task_laui } = validateRequest<{ task_laui: string }>(DIAGNOSE_PATH, { task_laui: ctx.params.task_laui }, 'path');
    const query = validateRequest<{ history?: 'true' | 'false' }>(DIAGNOSE_QUERY, { ...ctx.query }, 'query');
    const principal = principalOf(ctx);
    const task = await deps.items.get(task_laui);
    if (!task || task.item_type !== 'task') throw notFound('Item not found');
    if (!(await deps.access.can(principal, task, 'VIEW'))) throw forbidden();
    if (query.history === 'true') {
      ctx.body = await deps.journal.history(task.laui);
      return;
    }
    const now = deps.clock.now();
    const settings = await loadSystemSettings(deps);
    const items = new Map<string, ReferencedItem>();
    for (const { laui } of referencedItems(task)) {
      const item = await deps.items.peek(laui);
      items.set(laui, item ? { item_type: item.item_type, deleted: item.is_deleted } : null);
    }
    const project = typeof task.project_laui === 'string' ? await deps.items.get(task.project_laui) : null;
    const cron = project
      ? await cronViewOf({ liveness: deps.liveness, now, settings }, project)
      : { cron_status: null, alive: false, latest_heartbeat: null, interval_seconds: settings.project_scheduler_interval };
    const checks = diagnoseTask({
      task,
      now,
      cron: { status: cron.cron_status, alive: cron.alive, latestHeartbeat: cron.latest_heartbeat ? new Date(cron.latest_heartbeat) : null, intervalSeconds: cron.interval_seconds },
      items,
      staleHeartbeatSeconds: settings.stale_heartbeat_seconds,
      taskHeartbeat: deps.workers.heartbeat(task.laui),
      workers: { running: deps.workers.running(), broker: deps.workers.broker },
      slotWait: deps.workers.slotWait?.(task.laui) ?? null,
      workflowState: await workflowStateOf(deps.items, task.parent_laui, new Map()),
      backfill: (await deps.backfillOf?.(task.laui)) ?? null,
    });
    await deps.journal.record(task.laui, checks, metadataFor(principal.laui, now, ctx.state.correlationId));
    ctx.body = checks;
  });
  return router;
};
