import Router from '@koa/router';
import { principalOf, type AppState } from '../../shared/http/AppState.ts';
import type { Laui } from '../../shared/ids.ts';
import type { Principal } from '../../shared/ports/Principal.ts';
import type { Collection } from '../../shared/read-store/ReadStore.ts';
import { readyToRunDecision } from '../../shared/task/readyToRun.ts';
import type { TaskRecord } from '../../shared/task/taskFields.ts';
import { lauiSchema, validateRequest } from '../../shared/validation/validateRequest.ts';
import type { Clock } from '../../shared/clock.ts';
import type { AccessControl } from '../../projections/catalog/accessControl.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import { itemView } from '../catalog/itemView.ts';

export interface ReadyToRunDeps {
  items: Collection<ItemDoc>;
  access: AccessControl;
  clock: Clock;
}

/** The state of a task's parent workflow (folder_metadata.state), null when it has none. */
export const workflowStateOf = async (items: Collection<ItemDoc>, parentLaui: unknown, cache: Map<string, string | null>): Promise<string | null> => {
  if (typeof parentLaui !== 'string') return null;
  if (!cache.has(parentLaui)) {
    const state = ((await items.peek(parentLaui))?.folder_metadata as { state?: unknown } | undefined)?.state;
    cache.set(parentLaui, typeof state === 'string' ? state : null);
  }
  return cache.get(parentLaui) ?? null;
};

/**
 * GET /catalog/get/tasks_ready_to_run (spec 4.3): OWN on the project (404 `Item not found with laui`,
 * 403 `Access denied`), then the project's tasks (the items' project_laui index) that pass
 * readyToRunDecision exactly, in creation order, as the catalog shows items.
 */
export const tasksReadyToRun = async (deps: ReadyToRunDeps, principal: Principal, projectLaui: Laui): Promise<Array<Record<string, unknown>>> => {
  await deps.access.require(principal, projectLaui, 'OWN');
  const now = deps.clock.now();
  const tasks = await deps.items.find({ where: { project_laui: projectLaui, item_type: 'task' }, sort: { field: 'created_seq', direction: 'asc' } });
  const workflows = new Map<string, string | null>();
  const ready: Array<Record<string, unknown>> = [];
  for (const task of tasks) {
    const workflowState = await workflowStateOf(deps.items, task.parent_laui, workflows);
    if (readyToRunDecision(task as unknown as TaskRecord, { projectLaui, workflowState, now }).ready) ready.push(itemView(task));
  }
  return ready;
};

export const READY_TO_RUN_PATH = { type: 'object', properties: { project_laui: lauiSchema }, required: ['project_laui'] } as const;

export const readyToRunRoutes = (deps: ReadyToRunDeps): Router<AppState> => {
  const router = new Router<AppState>({ prefix: '/api/v1/catalog' });
  router.get('/get/tasks_ready_to_run/:project_laui', async (ctx) => {
    const { project_laui } = validateRequest<{ project_laui: string }>(READY_TO_RUN_PATH, { project_laui: ctx.params.project_laui }, 'path');
    ctx.body = await tasksReadyToRun(deps, principalOf(ctx), project_laui);
  });
  return router;
};
