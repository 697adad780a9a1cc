import type { Clock } from '../../shared/clock.ts';
import { badRequest, forbidden, notFound } from '../../shared/errors.ts';
import type { EventStore, Position } from '../../shared/event-store/EventStore.ts';
import type { EventMetadata } from '../../shared/events.ts';
import { isLaui, newLaui, type Laui } from '../../shared/ids.ts';
import type { Principal } from '../../shared/ports/Principal.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import type { Collection } from '../../shared/read-store/ReadStore.ts';
import { ADHOC } from '../../shared/task/cron.ts';
import { toInstant } from '../../shared/task/dates.ts';
import { backfillStream } from '../../shared/task/backfill/backfillEvents.ts';
import { backfillProgress, type Backfill, type BackfillProgress, type TaskBackfills } from '../../shared/task/backfill/backfillState.ts';
import type { AccessControl } from '../../projections/catalog/accessControl.ts';
import { handleCommand, loadRevision } from '../kernel/handleCommand.ts';
import { itemDecider } from '../catalog/decide.ts';
import { itemStream } from '../catalog/item.ts';
import { itemStatesOf } from '../catalog/itemStates.ts';
import { backfillDecider, type BackfillCommand } from './backfillDecider.ts';
import type { BackfillRegistry } from './backfillRegistry.ts';

export interface BackfillDeps {
  eventStore: EventStore;
  items: Collection<ItemDoc>;
  access: AccessControl;
  clock: Clock;
  registry: BackfillRegistry;
}

export interface BackfillRequest {
  item_laui: Laui;
  start_date: Date;
  end_date: Date;
  max_active_runs: number;
}

const dateOf = (body: Record<string, unknown>, field: string): Date => {
  const value = body[field];
  const date = typeof value === 'string' ? toInstant(value) : null;
  if (date === null) throw badRequest(`${field} is required: an ISO 8601 date or datetime`);
  return date;
};

/** POST /task/backfill's body: every problem a 400 `{detail}` (README: Backfill). */
export const parseBackfillRequest = (raw: unknown): BackfillRequest => {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw badRequest('The body must be a JSON object: {item_laui, start_date, end_date, max_active_runs?}');
  const body = raw as Record<string, unknown>;
  if (!isLaui(body.item_laui)) throw badRequest('item_laui is required: the LAUI of a scheduled task');
  const maxActiveRuns = body.max_active_runs ?? 1;
  if (typeof maxActiveRuns !== 'number') throw badRequest('max_active_runs must be an integer');
  return { item_laui: body.item_laui, start_date: dateOf(body, 'start_date'), end_date: dateOf(body, 'end_date'), max_active_runs: maxActiveRuns };
};

/** The task a backfill is asked for, with `permission` on it: 404 when missing, deleted or not a task, 403 without it. */
const taskFor = async (deps: BackfillDeps, principal: Principal, laui: Laui, permission: 'VIEW' | 'EDIT'): Promise<ItemDoc> => {
  const task = await deps.items.get(laui);
  if (!task || task.is_deleted || task.item_type !== 'task') throw notFound('Item not found');
  if (!(await deps.access.can(principal, task, permission))) throw forbidden();
  return task;
};

/** POST /task/backfill: EDIT on the task; the schedule is the task's stream's, not the read model's copy. */
export const requestBackfill = async (
  deps: BackfillDeps,
  principal: Principal,
  request: BackfillRequest,
  metadata: EventMetadata,
): Promise<{ backfillId: Laui; position: Position | null }> => {
  await taskFor(deps, principal, request.item_laui, 'EDIT');
  const task = await loadRevision(deps.eventStore, itemStream(request.item_laui), itemDecider, itemStatesOf(deps.eventStore));
  if (task.state.status !== 'live' || task.state.itemType !== 'task') throw notFound('Item not found');
  const fields = task.state.fields;
  const backfillId = newLaui(new Date(metadata.at));
  const command: BackfillCommand = {
    kind: 'request',
    backfillId,
    taskLaui: request.item_laui,
    projectLaui: typeof fields.project_laui === 'string' ? fields.project_laui : null,
    frequency: typeof fields.frequency === 'string' ? fields.frequency : ADHOC,
    startDate: request.start_date,
    endDate: request.end_date,
    maxActiveRuns: request.max_active_runs,
    taskRevision: task.revision ?? -1,
    requestedBy: principal.laui,
    at: metadata.at,
  };
  // Refused before it is registered (a 400 or a 409 writes nothing); the decision is made again on the append.
  backfillDecider.decide(command, await taskBackfills(deps.eventStore, request.item_laui));
  await deps.registry.register(backfillId, request.item_laui, metadata);
  const result = await handleCommand({ eventStore: deps.eventStore, streamId: backfillStream(request.item_laui), decider: backfillDecider, command, metadata });
  return { backfillId, position: result.position };
};

/** The backfills of a task as its stream holds them. */
export const taskBackfills = async (eventStore: EventStore, taskLaui: Laui): Promise<TaskBackfills> => (await loadRevision(eventStore, backfillStream(taskLaui), backfillDecider)).state;

/**
 * A backfill the caller may see: 404 `Backfill not found` for an unknown id and for one of a task
 * the caller may not VIEW (another tenant learns nothing), 403 when `EDIT` is asked and only VIEW held.
 */
export const backfillFor = async (deps: BackfillDeps, principal: Principal, backfillId: string, permission: 'VIEW' | 'EDIT'): Promise<Backfill> => {
  const taskLaui = isLaui(backfillId) ? await deps.registry.taskOf(backfillId) : null;
  const task = taskLaui === null ? null : await deps.items.get(taskLaui);
  if (taskLaui === null || !task || !(await deps.access.can(principal, task, 'VIEW'))) throw notFound('Backfill not found');
  const backfill = (await taskBackfills(deps.eventStore, taskLaui)).backfills[backfillId];
  if (backfill === undefined) throw notFound('Backfill not found');
  if (permission === 'EDIT' && !(await deps.access.can(principal, task, 'EDIT'))) throw forbidden();
  return backfill;
};

/** POST /task/backfill/{backfill_id}/cancel: EDIT on the task. */
export const cancelBackfill = async (deps: BackfillDeps, principal: Principal, backfillId: string, metadata: EventMetadata): Promise<Position | null> => {
  const backfill = await backfillFor(deps, principal, backfillId, 'EDIT');
  const result = await handleCommand({
    eventStore: deps.eventStore,
    streamId: backfillStream(backfill.taskLaui),
    decider: backfillDecider,
    command: { kind: 'cancel', backfillId: backfill.id, by: principal.laui, reason: null, at: metadata.at },
    metadata,
  });
  return result.position;
};

/** The task's backfill not completed yet, as its progress (diagnose, the console), or null. */
export const activeBackfill = async (eventStore: EventStore, taskLaui: Laui): Promise<BackfillProgress | null> => {
  const state = await taskBackfills(eventStore, taskLaui);
  const active = state.active === null ? undefined : state.backfills[state.active];
  return active === undefined ? null : backfillProgress(active);
};

/** GET /task/backfill?task_laui=: the task's backfills, newest first (VIEW on the task; 404 as GET /catalog/get). */
export const backfillsOfTask = async (deps: BackfillDeps, principal: Principal, taskLaui: Laui): Promise<BackfillProgress[]> => {
  await taskFor(deps, principal, taskLaui, 'VIEW');
  const state = await taskBackfills(deps.eventStore, taskLaui);
  return Object.values(state.backfills).reverse().map(backfillProgress);
};
