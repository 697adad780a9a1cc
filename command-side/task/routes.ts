import { asks, changesOf, decideRun, onlyChangesOf, runEndingOf } from '../../shared/task/runLifecycle.ts';
import type { TaskRecord } from '../../shared/task/taskFields.ts';
import Router from '@koa/router';
import { forbidden, notFound } from '../../shared/errors.ts';
import { principalOf, type AppContext, type AppState } from '../../shared/http/AppState.ts';
import { requestWrites } from '../../shared/http/requestWrites.ts';
import type { ReadModelProgress } from '../../shared/read-store/ReadModelProgress.ts';
import { lauiSchema, requireObjectBody, validateRequest } from '../../shared/validation/validateRequest.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import { changeTask } from './changeTask.ts';
import { referenceChecker } from '../catalog/checkTaskReferences.ts';
import { dispatchConnection } from './dispatchConnection.ts';
import { endRun } from './endRun.ts';
import type { ItemState } from '../catalog/item.ts';
import { runMany, runTask } from './runTask.ts';
import type { TaskDeps } from './taskDeps.ts';
import { updateSchema } from './updateSchema.ts';

export interface TaskRoutesDeps extends TaskDeps {
  readModels: ReadModelProgress;
  readYourWritesTimeoutMs: number;
}

export const PATH_SCHEMA = { type: 'object', properties: { task_laui: lauiSchema }, required: ['task_laui'] } as const;
export const MULTIPLE_SCHEMA = { type: 'object', properties: { task_lauis: { type: 'array', items: lauiSchema, maxItems: 1000 } }, required: ['task_lauis'] } as const;

const pathLaui = (ctx: AppContext) => validateRequest<{ task_laui: string }>(PATH_SCHEMA, { task_laui: ctx.params.task_laui }, 'path').task_laui;

/** Task endpoints of spec 4.2 (diagnose comes with the scheduler). */
export const taskRoutes = (deps: TaskRoutesDeps): Router<AppState> => {
  const router = new Router<AppState>({ prefix: '/api/v1/task' });
  const { meta, settle, settleRuns } = requestWrites(deps);
  const taskOf = async (laui: string): Promise<ItemDoc> => {
    const task = await deps.items.get(laui);
    if (!task || task.item_type !== 'task') throw notFound('Item not found');
    return task;
  };
  /** update, finish, dangerously_reset change a task's state and queue: EDIT on it (403 `Access denied`). */
  const editableTaskOf = async (ctx: AppContext, laui: string): Promise<ItemDoc> => {
    const task = await taskOf(laui);
    if (!(await deps.access.can(principalOf(ctx), task, 'EDIT'))) throw forbidden();
    return task;
  };

  router.post('/run', async (ctx) => {
    const outcome = await runTask(deps, principalOf(ctx), requireObjectBody(ctx.request.body), meta(ctx), settle);
    await settleRuns(outcome.position);
    ctx.body = { item_laui: outcome.taskLaui };
  });

  router.post('/multiple_tasks', async (ctx) => {
    const body = validateRequest<{ task_lauis: string[] }>(MULTIPLE_SCHEMA, requireObjectBody(ctx.request.body));
    // Peeked, not copied: the run pipeline only reads a task's document (runReads).
    const tasks = await Promise.all(body.task_lauis.map((laui) => deps.items.peek(laui)));
    const missing = body.task_lauis.filter((_, index) => !tasks[index] || tasks[index]?.item_type !== 'task');
    if (missing.length > 0) throw notFound(`Item not found: ${missing.join(', ')}`);
    // As POST /task/run: running a task needs EDIT on it and VIEW on everything it references.
    const references = referenceChecker(deps);
    for (const task of tasks as ItemDoc[]) {
      if (!(await deps.access.can(principalOf(ctx), task, 'EDIT'))) throw forbidden();
      await references.require(principalOf(ctx), task);
    }
    const { results, position } = await runMany(deps, tasks as ItemDoc[], meta(ctx));
    await settleRuns(position);
    ctx.body = { task_results: results.map((outcome) => ({ task_laui: outcome.taskLaui, execution_result_id: outcome.executionResultId })) };
  });

  router.post('/update/:task_laui', async (ctx) => {
    const laui = pathLaui(ctx);
    const body = validateRequest<Record<string, unknown>>(updateSchema, requireObjectBody(ctx.request.body));
    const task = await editableTaskOf(ctx, laui);
    if (typeof body.duration === 'number') body.duration = Math.trunc(body.duration);
    const metadata = meta(ctx);
    // A state a run ends in, given while the run is in the state its end leaves (running), is the
    // run's end as at its worker: the lifecycle's outcome trigger on the task as its stream holds it,
    // committed by the worker's end path (endRun); the fields given are written with it and win.
    // The slot is the client's POST /task/finish's to free (the spec's worker protocol: update,
    // post actions, finish). Any other state is a field edit the item decider guards (409 when the
    // table refuses it).
    const ending = runEndingOf(body.state);
    const changes = (state: ItemState): Record<string, unknown> => {
      if (ending === null || state.status !== 'live' || !ending.from.includes(String(state.fields.state))) return body;
      return { ...onlyChangesOf(decideRun(state.fields as TaskRecord, { trigger: ending.trigger, at: new Date(metadata.at) })), ...body };
    };
    const ended = await endRun(deps, String(task.connection_laui), metadata, { taskLaui: laui, slot: null, terminal: { changes } });
    await settle(ended.position);
    ctx.body = { item_laui: laui };
  });

  router.post('/finish/:task_laui', async (ctx) => {
    const task = await editableTaskOf(ctx, pathLaui(ctx));
    // The run's end path (endRun): its slot freed (whatever dispatch holds it; 404 when the task is
    // not in its queue) and leased to the next waiting run, in one queue commit.
    const ended = await endRun(deps, String(task.connection_laui), meta(ctx), { taskLaui: task.laui, slot: { anyDispatch: true } });
    await settle(ended.position);
    ctx.body = { message: `Task ${task.laui} removed from the connection queue`, item_laui: task.laui };
  });

  router.post('/dangerously_reset/:task_laui', async (ctx) => {
    const task = await editableTaskOf(ctx, pathLaui(ctx));
    const metadata = meta(ctx);
    const decision = decideRun(task as TaskRecord, { trigger: 'Reset', at: new Date(metadata.at) });
    // Its LeaveQueue effect is performed before the commit, not after: a run asked for right after
    // the reset must find the task out of its queue, or rule 8 would drop it as already queued.
    const leaves = typeof task.connection_laui === 'string' && asks(decision, 'LeaveQueue') ? task.connection_laui : null;
    if (leaves !== null) await deps.queue.remove(leaves, task.laui, metadata);
    const position = await changeTask(deps.eventStore, task.laui, changesOf(decision), metadata, undefined, 'dangerously_reset');
    if (leaves !== null) await dispatchConnection(deps, leaves, metadata);
    await settle(position);
    ctx.body = { message: `Task ${task.laui} reset to scheduled`, item_laui: task.laui };
  });

  return router;
};

