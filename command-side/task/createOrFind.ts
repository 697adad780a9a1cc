import { AppError, unprocessable } from '../../shared/errors.ts';
import type { EventMetadata } from '../../shared/events.ts';
import type { Position } from '../../shared/event-store/EventStore.ts';
import type { Principal } from '../../shared/ports/Principal.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import { createItem, UNIQUE_KEY_EXISTS } from '../catalog/createItem.ts';
import { actionsStatusAfter, runHookList } from '../action/runHooks.ts';
import { taskHoldingKey } from './taskHoldingKey.ts';
import type { TaskDeps } from './taskDeps.ts';

/** A task whose unique key exists is the existing task (spec 4.2), not a 409. */
export const createOrFind = async (
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
    const task = await deps.items.peek(created.laui);
    if (!task) throw new Error(`task ${created.laui} is not visible after creation`);
    return task;
  } catch (error) {
    if (!(error instanceof AppError) || error.status !== 409 || error.detail !== UNIQUE_KEY_EXISTS) throw error;
    const existing = await taskHoldingKey(deps, fields, settle);
    if (!existing) throw error;
    return existing;
  }
};
