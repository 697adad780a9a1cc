import { AppError, forbidden, notFound, unprocessable } from '../../shared/errors.ts';
import type { EventMetadata } from '../../shared/events.ts';
import type { Position } from '../../shared/event-store/EventStore.ts';
import { isLaui, type Laui } from '../../shared/ids.ts';
import type { Principal } from '../../shared/ports/Principal.ts';
import { isAdhoc } from '../../shared/task/cron.ts';
import { referencedItems, validateTask, ONLY_TASKS_DETAIL, type ReferencedItem } from '../../shared/task/validateTask.ts';
import type { ItemDoc } from '../../projections/catalog/itemsProjection.ts';
import { createItem, UNIQUE_KEY_EXISTS } from '../catalog/createItem.ts';
import { uniqueKeyOf } from '../../shared/item-types/primaryKey.ts';
import { changeTask } from './changeTask.ts';
import { actionsStatusAfter, runHookList } from '../action/runHooks.ts';
import { maxParallelismOf, sendLeases, sortDictOf } from './dispatchConnection.ts';
import { mergedConfigOf } from './mergedConfig.ts';
import { loadSystemSettings, type TaskDeps } from './taskDeps.ts';

const TERMINAL_STATES = new Set(['success', 'error', 'timeout', 'cancelled', 'fail']);
const NOT_IN_FLIGHT = ['created', 'scheduled', 'success', 'error', 'timeout', 'cancelled', 'fail', 'queued_for_connection'];
const CREATE_REQUIRED = ['name', 'parent_laui', 'project_laui', 'account_laui', 'operator_laui', 'connection_laui'];

export interface RunOutcome {
  taskLaui: Laui;
  /** A pre-action failed or returned false: the task was not queued (see actions_status). */
  skipped?: boolean;
  /** Bus message id when the task was dispatched at once, null while it waits for a slot. */
  executionResultId: string | null;
  position: Position | null;
}

/**
 * POST /task/run: create (when no item_laui) -> validate -> (pre-actions) -> connection queue ->
 * payload templating -> dispatch. Execution then goes on asynchronously in a worker.
 */
export const runTask = async (
  deps: TaskDeps,
  principal: Principal,
  body: Record<string, unknown>,
  metadata: EventMetadata,
  settle: (position: Position | null) => Promise<void>,
): Promise<RunOutcome> => {
  if (body.item_type !== undefined && body.item_type !== 'task') throw unprocessable(ONLY_TASKS_DETAIL);
  let task: ItemDoc;
  if (body.item_laui === undefined) {
    const missing = CREATE_REQUIRED.filter((field) => body[field] === undefined || body[field] === null);
    if (missing.length > 0) throw unprocessable(missing.map((field) => ({ type: 'missing', loc: ['body', field], msg: 'Field required', input: null })));
    // Rules that need no lookup are checked before anything is written.
    const early = validateTask({ ...body, item_type: 'task' }, { enforce_connection_operator_mapping: false, connection_operator_mapping: {}, items: new Map() });
    if (!early.ok && !early.detail.includes('item not found')) throw unprocessable(early.detail);
    task = await createOrFind(deps, principal, body, metadata, settle);
  } else {
    if (!isLaui(body.item_laui)) throw unprocessable([{ type: 'value_error', loc: ['body', 'item_laui'], msg: 'Invalid ObjectId', input: body.item_laui }]);
    const found = await deps.items.get(body.item_laui);
    if (!found || found.is_deleted) throw notFound('Item not found');
    if (found.item_type !== 'task') throw unprocessable(ONLY_TASKS_DETAIL);
    task = found;
  }
  if (!(await deps.access.can(principal, task, 'EDIT'))) throw forbidden();
  return enqueueAndDispatch(deps, task, body, metadata);
};

/** Validation, queueing and dispatch of one existing task; shared by run and multiple_tasks. */
export const enqueueAndDispatch = async (deps: TaskDeps, task: ItemDoc, overrides: Record<string, unknown>, metadata: EventMetadata): Promise<RunOutcome> => {
  const settings = await loadSystemSettings(deps.items);
  const lookup = new Map<string, ReferencedItem>();
  for (const { laui } of referencedItems(task)) {
    const item = await deps.items.get(laui);
    lookup.set(laui, item ? { item_type: item.item_type, deleted: item.is_deleted } : null);
  }
  const verdict = validateTask(task, {
    enforce_connection_operator_mapping: settings.enforce_connection_operator_mapping,
    connection_operator_mapping: settings.connection_operator_mapping,
    items: lookup,
  });
  if (!verdict.ok) throw new AppError(verdict.status, verdict.detail);
  const merged = await mergedConfigOf(deps.items, task);
  // Rule 7: pre-actions are awaited; any that fails or returns false skips the run (not queued).
  const pre = await runHookList(deps, task, 'pre_actions', metadata, merged.config.parameters);
  if (pre.statuses.length > 0) {
    const recorded = await changeTask(deps.eventStore, task.laui, { actions_status: actionsStatusAfter(task.actions_status, 'pre_actions', pre.statuses) }, metadata);
    if (!pre.allPassed) return { taskLaui: task.laui, executionResultId: null, position: recorded, skipped: true };
  }
  const changes: Record<string, unknown> = {
    state: 'queued_for_connection',
    user_set_state: null,
    total_retries: merged.total_retries,
    retry_interval: merged.retry_interval,
    last_system_updated_date: metadata.at,
  };
  if (typeof overrides.logical_date === 'string') changes.logical_date = overrides.logical_date;
  else if (isAdhoc(task.frequency ?? 'ADHOC') && (task.logical_date ?? null) === null) changes.logical_date = metadata.at;
  const connectionLaui = String(task.connection_laui);
  const connection = await deps.items.get(connectionLaui);
  const sortDict = sortDictOf(connection);
  const sortValues = Object.fromEntries(Object.keys(sortDict).map((field) => [field, task[field] ?? null]));
  // A run that already reached its terminal state may still hold its lease for a moment (the worker
  // writes the state, then leaves the queue): release it here so an immediate re-run is not dropped.
  const lease = (await deps.queue.state(connectionLaui)).running.get(task.laui);
  if (lease && TERMINAL_STATES.has(String(task.state)) && lease.sessionId === task.session_id) {
    await deps.queue.release(connectionLaui, task.laui, lease.dispatchId, 'finished', metadata).catch((error: unknown) => {
      // The worker left the queue in between: nothing to release.
      if (!(error instanceof AppError && error.status === 404)) throw error;
    });
  }
  const queued = await deps.queue.enqueueAndDispatch(
    connectionLaui,
    { laui: task.laui, priority: Number(task.priority ?? 1), sortValues },
    maxParallelismOf(connection),
    sortDict,
    metadata,
  );
  // Rule 8: a task already in its queue is dropped, and its state stays as the queue left it.
  const leadsItself = queued.enqueued && queued.leases.some((taken) => taken.taskLaui === task.laui);
  const sent = await sendLeases(deps, connectionLaui, queued.leases, metadata, leadsItself ? { taskLaui: task.laui, changes } : null);
  let position = sent.position ?? queued.position;
  // Waiting for a slot: record queued_for_connection unless a finishing worker already leased it.
  if (queued.enqueued && !leadsItself) position = (await changeTask(deps.eventStore, task.laui, changes, metadata, NOT_IN_FLIGHT)) ?? position;
  return { taskLaui: task.laui, executionResultId: sent.sent.get(task.laui) ?? null, position };
};

/** A task whose unique key exists is the existing task (spec 4.2), not a 409. */
const createOrFind = async (
  deps: TaskDeps,
  principal: Principal,
  body: Record<string, unknown>,
  metadata: EventMetadata,
  settle: (position: Position | null) => Promise<void>,
): Promise<ItemDoc> => {
  const { item_laui: _ignored, logical_date: _logical, ...fields } = body;
  // Rule 7: create actions run before the task is persisted; one returning false fails the creation.
  const create = await runHookList(deps, { ...fields, item_type: 'task' }, 'create_actions', metadata);
  if (!create.allPassed) {
    const failed = create.statuses.find((entry) => entry.state !== 'success');
    throw unprocessable({
      task_name: String(fields.name),
      message: `create action ${failed?.name ?? failed?.laui ?? ''} ${failed?.state === 'failed' ? 'returned false' : `failed: ${failed?.error ?? failed?.state ?? ''}`}`,
    });
  }
  if (create.statuses.length > 0) fields.actions_status = actionsStatusAfter(fields.actions_status, 'create_actions', create.statuses);
  try {
    const created = await createItem(deps, principal, { ...fields, item_type: 'task' }, metadata);
    await settle(created.position);
    const task = await deps.items.get(created.laui);
    if (!task) throw new Error(`task ${created.laui} is not visible after creation`);
    return task;
  } catch (error) {
    if (!(error instanceof AppError) || error.status !== 409 || error.detail !== UNIQUE_KEY_EXISTS) throw error;
    const pk = uniqueKeyOf('task', { partition: 'ALL', ...fields });
    const [existing] = await deps.items.find({
      where: { item_type: 'task', name: String(fields.name), project_laui: String(fields.project_laui), account_laui: String(fields.account_laui) },
    }).then((docs) => docs.filter((doc) => uniqueKeyOf('task', doc) === pk));
    if (!existing) throw error;
    return existing;
  }
};
